package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

func testNetEvents(t *testing.T, h *harness) {
	sb := sandboxrec.Sandbox{ID: "sb_1", TenantID: "a", State: sandboxrec.Running, Network: `{"mode":"allowlist","allow":["pypi.org"]}`}
	must(t, h.s.CreateSandbox(ctx, sb))
	var in []store.NetEvent
	for i := range 5 {
		in = append(in, store.NetEvent{SandboxID: []string{"sb_1", "sb_2"}[i%2], TenantID: "a", Time: t0.Add(time.Duration(i) * time.Second), Data: []byte(fmt.Sprintf(`{"n":%d}`, i))})
	}
	must(t, h.s.AppendNetEvents(ctx, in[:2]))
	must(t, h.s.AppendNetEvents(ctx, in[2:]))
	must(t, h.s.AppendNetEvents(ctx, nil))
	s := h.restart(t) // the log outlives the process
	got, err := s.NetEvents(ctx, "sb_1", 0, 100)
	must(t, err)
	var data []string
	for i, e := range got {
		data = append(data, string(e.Data))
		if e.SandboxID != "sb_1" || e.TenantID != "a" || (i > 0 && e.ID <= got[i-1].ID) {
			t.Errorf("event %+v", e)
		}
	}
	if d := cmp.Diff([]string{`{"n":0}`, `{"n":2}`, `{"n":4}`}, data); d != "" {
		t.Errorf("sb_1's log (-want +got):\n%s", d)
	}
	page, err := s.NetEvents(ctx, "sb_1", got[0].ID, 1)
	if err != nil || len(page) != 1 || string(page[0].Data) != `{"n":2}` || !page[0].Time.Equal(t0.Add(2*time.Second)) {
		t.Errorf("page after the first: %+v, %v", page, err)
	}
	if page, err := s.NetEvents(ctx, "sb_1", got[2].ID, 10); err != nil || len(page) != 0 {
		t.Errorf("page after the last: %+v, %v", page, err)
	}
	back, err := s.GetSandbox(ctx, "sb_1")
	if err != nil || back.Network != sb.Network {
		t.Errorf("network policy round trip: %q, %v", back.Network, err)
	}
}

// chainOf links events of one sandbox and tenant with the data given, one
// millisecond apart, of type typ.
func chainOf(t *testing.T, sandbox, tenant, typ string, at time.Time, data ...string) []audit.Event {
	t.Helper()
	var out []audit.Event
	for i, d := range data {
		e := audit.Event{Time: at.Add(time.Duration(i) * time.Second), Sandbox: sandbox, Tenant: tenant, Actor: "key_1",
			Type: typ, Data: json.RawMessage(d)}
		var prev *audit.Event
		if i > 0 {
			prev = &out[i-1]
		}
		must(t, audit.Link(prev, &e))
		out = append(out, e)
	}
	return out
}

// auditChain links n events of sandbox id, one second apart from start,
// alternating exec.started and exec.exited.
func auditChain(t *testing.T, id string, start time.Time, n int) []audit.Event {
	t.Helper()
	var out []audit.Event
	var prev *audit.Event
	for i := range n {
		typ := audit.ExecStarted
		if i%2 == 1 {
			typ = audit.ExecExited
		}
		e := audit.Event{Time: start.Add(time.Duration(i) * time.Second), Sandbox: id, Tenant: "ten_1", Actor: "key_1",
			Type: typ, Data: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))}
		must(t, audit.Link(prev, &e))
		out = append(out, e)
		prev = &out[len(out)-1]
	}
	return out
}

// verifyLog checks a sandbox's whole log the way internal/audit does: every
// event against the chain, and the chain's end against the stored head.
func verifyLog(t *testing.T, s store.Store, sandbox string, want int) {
	t.Helper()
	events, err := s.AuditEvents(ctx, sandbox, store.AuditFilter{})
	must(t, err)
	seq, hash, err := s.AuditHead(ctx, sandbox)
	must(t, err)
	var v audit.Verifier
	for _, e := range events {
		v.Add(e)
	}
	v.Head(seq, hash)
	if r := v.Result(); !r.OK || r.Events != int64(want) {
		t.Errorf("log of %s: %+v, want %d events that verify", sandbox, r, want)
	}
}

func testAudit(t *testing.T, h *harness) {
	s := h.s
	if seq, hash, err := s.AuditHead(ctx, "sb_1"); seq != 0 || hash != "" || err != nil {
		t.Fatalf("head of no log: %d %q %v", seq, hash, err)
	}
	start := t0.Truncate(time.Second)
	a := auditChain(t, "sb_1", start, 10)
	b := auditChain(t, "sb_2", start, 3)
	// Two sandboxes' events in one batch, and a second batch.
	must(t, s.AppendAudit(ctx, append(append([]audit.Event{}, a[:4]...), b...)))
	must(t, s.AppendAudit(ctx, a[4:]))
	must(t, s.AppendAudit(ctx, nil))
	if seq, hash, err := s.AuditHead(ctx, "sb_1"); seq != 10 || hash != a[9].Hash || err != nil {
		t.Fatalf("head: %d %q %v", seq, hash, err)
	}
	// A sequence number taken twice is refused, and the batch with it.
	more := auditChain(t, "sb_3", start, 1)
	if err := s.AppendAudit(ctx, append(more, a[9])); !errors.Is(err, store.ErrConflict) {
		t.Errorf("event appended twice: %v", err)
	}
	if seq, _, _ := s.AuditHead(ctx, "sb_3"); seq != 0 {
		t.Errorf("a refused batch moved another log's head to %d", seq)
	}
	got, err := s.AuditEvents(ctx, "sb_1", store.AuditFilter{})
	if err != nil || len(got) != 10 {
		t.Fatalf("events: %d, %v", len(got), err)
	}
	if d := cmp.Diff(a, got); d != "" {
		t.Errorf("events as stored (-want +got):\n%s", d)
	}
	verifyLog(t, s, "sb_1", 10)
	verifyLog(t, s, "sb_2", 3)
	for name, tc := range map[string]struct {
		f    store.AuditFilter
		seqs []int64
	}{
		"after":      {store.AuditFilter{AfterSeq: 7}, []int64{8, 9, 10}},
		"type":       {store.AuditFilter{Types: []string{audit.ExecExited}}, []int64{2, 4, 6, 8, 10}},
		"from to":    {store.AuditFilter{From: start.Add(2 * time.Second), To: start.Add(5 * time.Second)}, []int64{3, 4, 5}},
		"limit":      {store.AuditFilter{Limit: 2, AfterSeq: 1}, []int64{2, 3}},
		"two types":  {store.AuditFilter{Types: []string{audit.ExecExited, audit.ExecStarted}, Limit: 3}, []int64{1, 2, 3}},
		"none match": {store.AuditFilter{Types: []string{audit.FileRead}}, nil},
	} {
		got, err := s.AuditEvents(ctx, "sb_1", tc.f)
		must(t, err)
		var seqs []int64
		for _, e := range got {
			seqs = append(seqs, e.Seq)
		}
		if fmt.Sprint(seqs) != fmt.Sprint(tc.seqs) {
			t.Errorf("%s: seqs %v, want %v", name, seqs, tc.seqs)
		}
	}

	// Reopened, the log is the same.
	s = h.restart(t)
	again, err := s.AuditEvents(ctx, "sb_1", store.AuditFilter{})
	if err != nil || len(again) != 10 || again[9].Hash != a[9].Hash {
		t.Fatalf("after reopening: %d events, %v", len(again), err)
	}

	// Pruning takes whole logs whose newest event is older than the cut,
	// with their network logs.
	must(t, s.AppendNetEvents(ctx, []store.NetEvent{{SandboxID: "sb_2", TenantID: "ten_1", Time: start, Data: []byte(`{}`)},
		{SandboxID: "sb_1", TenantID: "ten_1", Time: start, Data: []byte(`{}`)}}))
	n, err := s.PruneAudit(ctx, start.Add(5*time.Second))
	if err != nil || n != 1 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	if left, _ := s.AuditEvents(ctx, "sb_2", store.AuditFilter{}); len(left) != 0 {
		t.Errorf("sb_2's log after prune: %d events", len(left))
	}
	if left, _ := s.NetEvents(ctx, "sb_2", 0, 10); len(left) != 0 {
		t.Errorf("sb_2's network log after prune: %d events", len(left))
	}
	if seq, _, _ := s.AuditHead(ctx, "sb_2"); seq != 0 {
		t.Errorf("sb_2's head after prune: %d", seq)
	}
	if left, _ := s.AuditEvents(ctx, "sb_1", store.AuditFilter{}); len(left) != 10 {
		t.Errorf("sb_1's log after prune: %d events", len(left))
	}
	if left, _ := s.NetEvents(ctx, "sb_1", 0, 10); len(left) != 1 {
		t.Errorf("sb_1's network log after prune: %d events", len(left))
	}
	if n, err := s.PruneAudit(ctx, start.Add(5*time.Second)); err != nil || n != 0 {
		t.Errorf("second prune: %d, %v", n, err)
	}
}

// testAuditOutputCapped: the flag that a log's output recording has
// stopped is set by the marker event and survives later batches.
func testAuditOutputCapped(t *testing.T, h *harness) {
	s := h.s
	ev := chainOf(t, "sb_1", "ten_1", audit.ExecOutput, t0, `{}`, `{"limit_bytes":1}`, `{}`)
	ev[1].Type = audit.OutputCapped
	for i := 1; i < len(ev); i++ {
		must(t, audit.Link(&ev[i-1], &ev[i]))
	}
	for i, want := range []bool{false, true, true} {
		must(t, s.AppendAudit(ctx, ev[i:i+1]))
		if got, err := s.AuditOutputCapped(ctx, "sb_1"); err != nil || got != want {
			t.Errorf("after event %d: capped %v, %v; want %v", i+1, got, err, want)
		}
	}
	if got, err := s.AuditOutputCapped(ctx, "sb_none"); err != nil || got {
		t.Errorf("a sandbox without a log: capped %v, %v", got, err)
	}
}

// testStorageBytes: each tenant's count moves with every write and prune
// of what the quota covers, and is the same after a restart.
func testStorageBytes(t *testing.T, h *harness) {
	s := h.s
	old := t0.Add(-48 * time.Hour)
	big := `{"data":"` + strings.Repeat("a", 40000) + `"}`
	aOld := chainOf(t, "sb_a_old", "ten_a", audit.ExecOutput, old, big, `{"n":1}`)
	aNew := chainOf(t, "sb_a", "ten_a", audit.ExecOutput, t0, `{"n":2}`)
	bNew := chainOf(t, "sb_b", "ten_b", audit.ExecOutput, t0, `{"n":3}`, `{"n":4}`)
	spec := `{"prompt":"` + strings.Repeat("p", 1000) + `"}`
	steps := []struct {
		name string
		do   func() error
		want map[string]int64 // the change of each tenant's count
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
		{"events of a task that does not exist count for nobody", func() error {
			return s.AppendTaskEvents(ctx, "tsk_none", []taskrec.Event{{Time: t0, Type: "message", Data: []byte(`{}`)}})
		}, map[string]int64{}},
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
	before, err := s.StorageByTenant(ctx)
	must(t, err)
	if len(before) != 0 {
		t.Errorf("an empty store keeps %v", before)
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, err := s.StorageByTenant(ctx)
		must(t, err)
		for _, tenant := range []string{"ten_a", "ten_b"} {
			if g := got[tenant] - before[tenant]; g != st.want[tenant] {
				t.Errorf("%s: tenant %s moved by %d, want %d", st.name, tenant, g, st.want[tenant])
			}
			if n, err := s.StorageBytes(ctx, tenant); err != nil || n != got[tenant] {
				t.Errorf("%s: StorageBytes(%s) = %d, %v; StorageByTenant says %d", st.name, tenant, n, err, got[tenant])
			}
		}
		before = got
	}
	if n, _ := s.StorageBytes(ctx, "ten_none"); n != 0 {
		t.Errorf("a tenant that keeps nothing: %d", n)
	}
	s = h.restart(t)
	after, err := s.StorageByTenant(ctx)
	must(t, err)
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("counts changed across a restart (-before +after):\n%s", d)
	}
}
