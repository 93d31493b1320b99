package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// recount sums every tenant's storage the slow way, over all the tables.
func recount(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	rows, err := db.Query(`SELECT tenant_id, SUM(n) FROM (SELECT tenant_id, bytes AS n FROM disks
		UNION ALL SELECT * FROM (` + storageRecount + `)) GROUP BY tenant_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var tenant string
		var n int64
		if err := rows.Scan(&tenant, &n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			out[tenant] = n
		}
	}
	return out
}

// storedCounts is tenant_storage as stored (not the mirror).
func storedCounts(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	rows, err := db.Query(`SELECT tenant_id, bytes FROM tenant_storage WHERE bytes != 0`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var tenant string
		var n int64
		if err := rows.Scan(&tenant, &n); err != nil {
			t.Fatal(err)
		}
		out[tenant] = n
	}
	return out
}

// chainOf links events of one sandbox and tenant with the data given.
func chainOf(t *testing.T, sandbox, tenant string, at time.Time, data ...string) []audit.Event {
	t.Helper()
	var out []audit.Event
	for i, d := range data {
		e := audit.Event{Time: at.Add(time.Duration(i) * time.Millisecond), Sandbox: sandbox, Tenant: tenant, Actor: "key_1",
			Type: audit.ExecOutput, Data: json.RawMessage(d)}
		var prev *audit.Event
		if i > 0 {
			prev = &out[i-1]
		}
		if err := audit.Link(prev, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// TestStorageBytesFollowEveryWriter: each tenant's count moves with
// every write and prune of what the quota covers, in the same
// transaction, and always equals a full recount: in memory, as stored,
// and after a restart.
func TestStorageBytesFollowEveryWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	ctx := context.Background()
	old := t0.Add(-48 * time.Hour)
	big := `{"data":"` + strings.Repeat("a", 40000) + `"}`
	aOld := chainOf(t, "sb_a_old", "ten_a", old, big, `{"n":1}`)
	aNew := chainOf(t, "sb_a", "ten_a", t0, `{"n":2}`)
	bNew := chainOf(t, "sb_b", "ten_b", t0, `{"n":3}`, `{"n":4}`)
	spec := `{"prompt":"` + strings.Repeat("p", 1000) + `"}`

	steps := []struct {
		name string
		do   func() error
		// want is the change of each tenant's count.
		want map[string]int64
	}{
		{"audit events of two tenants", func() error { return s.AppendAudit(ctx, append(append(aOld, aNew...), bNew...)) },
			map[string]int64{"ten_a": int64(len(big)+7+7) + 3*store.AuditRowBytes, "ten_b": 14 + 2*store.AuditRowBytes}},
		{"network log", func() error {
			return s.AppendNetEvents(ctx, []store.NetEvent{
				{SandboxID: "sb_a_old", TenantID: "ten_a", Time: old, Data: []byte(`{"host":"example.com"}`)},
				{SandboxID: "sb_b", TenantID: "ten_b", Time: t0, Data: []byte(`{}`)}})
		}, map[string]int64{"ten_a": 22 + store.NetRowBytes, "ten_b": 2 + store.NetRowBytes}},
		{"event stream", func() error {
			return s.AppendEvents(ctx, []eventrec.Event{
				{TenantID: "ten_a", SandboxID: "sb_a_old", Type: audit.ExecExited, Time: old, Data: []byte(`{"exit_code":0}`)},
				{TenantID: "ten_b", SandboxID: "sb_b", Type: audit.ExecExited, Time: t0, Data: []byte(`{"exit_code":1}`)}})
		}, map[string]int64{"ten_a": 15 + store.EventRowBytes, "ten_b": 15 + store.EventRowBytes}},
		{"task", func() error {
			return s.CreateTask(ctx, taskrec.Task{ID: "tsk_a", TenantID: "ten_a", Harness: "command", State: taskrec.Queued, Spec: spec, CreatedAt: t0})
		}, map[string]int64{"ten_a": int64(len(spec)) + store.TaskRowBytes}},
		{"task events", func() error {
			return s.AppendTaskEvents(ctx, "tsk_a", []taskrec.Event{{Time: t0, Type: "message", Data: []byte(`{"text":"hi"}`)}})
		}, map[string]int64{"ten_a": 13 + store.TaskEventRowBytes}},
		{"task artifacts", func() error {
			return s.SaveTaskArtifacts(ctx, []taskrec.Artifact{
				{TaskID: "tsk_a", Name: "out.txt", Kind: "file", Size: 5000, Content: make([]byte, 5000)},
				{TaskID: "tsk_a", Name: "workspace.diff", Kind: "diff", Size: 10, Content: make([]byte, 10)}})
		}, map[string]int64{"ten_a": 5010 + 2*store.ArtifactRowBytes}},
		{"an artifact replaced by a smaller one", func() error {
			return s.SaveTaskArtifacts(ctx, []taskrec.Artifact{{TaskID: "tsk_a", Name: "out.txt", Kind: "file", Size: 100, Content: make([]byte, 100)}})
		}, map[string]int64{"ten_a": -4900}},
		{"events past retention pruned", func() error { _, err := s.PruneEvents(ctx, t0.Add(-time.Hour), 0); return err },
			map[string]int64{"ten_a": -(15 + store.EventRowBytes)}},
		{"an old audit log pruned with its network log", func() error { _, err := s.PruneAudit(ctx, t0.Add(-time.Hour)); return err },
			map[string]int64{"ten_a": -(int64(len(big)+7) + 2*store.AuditRowBytes + 22 + store.NetRowBytes)}},
	}
	before, _ := s.StorageByTenant(ctx)
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, _ := s.StorageByTenant(ctx)
		for tenant, d := range st.want {
			if g := got[tenant] - before[tenant]; g != d {
				t.Errorf("%s: tenant %s moved by %d, want %d", st.name, tenant, g, d)
			}
		}
		if d := cmp.Diff(recount(t, s.db), got); d != "" {
			t.Errorf("%s: running count differs from a recount (-recount +count):\n%s", st.name, d)
		}
		if d := cmp.Diff(storedCounts(t, s.db), got); d != "" {
			t.Errorf("%s: count in memory differs from the stored one (-stored +memory):\n%s", st.name, d)
		}
		before = got
	}
	if n, _ := s.StorageBytes(ctx, "ten_a"); n <= 0 {
		t.Errorf("tenant a keeps %d bytes after the steps", n)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	after, _ := s.StorageByTenant(ctx)
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("counts changed across a restart (-before +after):\n%s", d)
	}
}

// TestStorageMigrationCountsExistingRows: a database from before storage
// quotas gets the default quota on every tenant, a count of what each
// tenant already keeps, and its capped logs marked capped.
func TestStorageMigrationCountsExistingRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Back to the schema before the storage migration (a fresh file built
	// by the earlier migrations), with rows in it.
	var tables []string
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	for _, n := range tables {
		if _, err := db.Exec(`DROP TABLE ` + n); err != nil {
			t.Fatal(err)
		}
	}
	prev := slices.Index(migrations, storageSchema)
	if prev < 0 {
		t.Fatal("no storage migration")
	}
	for i, m := range append([]string{`CREATE TABLE schema_version (version INTEGER NOT NULL)`}, migrations[:prev]...) {
		if _, err := db.Exec(m); err != nil {
			t.Fatalf("migration %d: %v", i, err)
		}
	}
	capped := chainOf(t, "sb_1", "ten_1", t0, `{"data":"xyz"}`, `{"limit_bytes":3}`)
	capped[1].Type = audit.OutputCapped
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO schema_version VALUES (?)`, []any{prev}},
		{`INSERT INTO tenants (id, name, max_sandboxes, max_memory_mb) VALUES ('ten_1', 'acme', 0, 0), ('ten_2', 'other', 3, 0)`, nil},
		{`INSERT INTO audit_events VALUES (?, 1, 0, 'ten_1', 'k', ?, ?, '', 'h1'), (?, 2, 0, 'ten_1', 'k', ?, ?, 'h1', 'h2')`,
			[]any{"sb_1", capped[0].Type, string(capped[0].Data), "sb_1", capped[1].Type, string(capped[1].Data)}},
		{`INSERT INTO audit_heads VALUES ('sb_1', 'ten_1', 2, 'h2', 0)`, nil},
		{`INSERT INTO net_events (sandbox_id, tenant_id, time, data) VALUES ('sb_1', 'ten_1', 0, '{"a":1}')`, nil},
		{`INSERT INTO tasks (id, tenant_id, harness, state, spec, created_at) VALUES ('tsk_1', 'ten_2', 'command', 'succeeded', '{}', 0)`, nil},
		{`INSERT INTO task_artifacts VALUES ('tsk_1', 'f', 'file', 4, '', 0, x'00010203')`, nil},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	db.Close()

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, id := range []string{"ten_1", "ten_2"} {
		if tn, err := s.GetTenant(ctx, id); err != nil || tn.MaxStorageMB != store.DefaultMaxStorageMB {
			t.Errorf("tenant %s after the migration: max_storage_mb %d, %v; want %d", id, tn.MaxStorageMB, err, store.DefaultMaxStorageMB)
		}
	}
	want := map[string]int64{
		"ten_1": int64(len(capped[0].Data)+len(capped[1].Data)) + 2*store.AuditRowBytes + 7 + store.NetRowBytes,
		"ten_2": 2 + store.TaskRowBytes + 4 + store.ArtifactRowBytes,
	}
	got, _ := s.StorageByTenant(ctx)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("counts after the migration (-want +got):\n%s", d)
	}
	if c, err := s.AuditOutputCapped(ctx, "sb_1"); err != nil || !c {
		t.Errorf("capped log after the migration: capped %v, %v", c, err)
	}
}
