package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func openTest(t *testing.T) (*SQLite, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "airlock.db")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
}

// A time with nanoseconds in a non-UTC zone: the store must keep both the
// instant and its precision.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("X", 5*3600))

func fixture() (Tenant, Key, Token, Sandbox) {
	tn := Tenant{ID: "ten_1", Name: "acme", MaxSandboxes: 10, MaxMemoryMB: 8192, MaxStorageMB: 512, CreatedAt: t0}
	k := Key{ID: "key_1", TenantID: tn.ID, Name: "ci", Hash: []byte{0, 1, 2, 0xff}, Admin: true, CreatedAt: t0}
	tok := Token{ID: "tok_1", SandboxID: "sb_1", TenantID: tn.ID, Hash: []byte("tokhash"), ExpiresAt: t0.Add(time.Hour)}
	sb := Sandbox{
		ID: "sb_1", TenantID: tn.ID, State: StateRunning, Template: "python:3.12",
		CPUs: 1.5, MemoryMB: 512, Pids: 256, DiskMB: 1024,
		Env:      map[string]string{"A": "1", "QUOTE": `"'\n`},
		Metadata: map[string]string{"job": "42", "weird.key \"x\"": "v"},
		Workdir:  "/work", CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute),
	}
	return tn, k, tok, sb
}

func seed(t *testing.T, s Store) (Tenant, Key, Token, Sandbox) {
	t.Helper()
	ctx := context.Background()
	tn, k, tok, sb := fixture()
	for _, err := range []error{
		s.CreateTenant(ctx, tn),
		s.CreateKey(ctx, k),
		s.CreateSandbox(ctx, sb),
		s.CreateToken(ctx, tok),
	} {
		if err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	return tn, k, tok, sb
}

func TestRoundTrip(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	tn, k, tok, sb := seed(t, s)

	ended := sb
	ended.ID, ended.State, ended.Reason = "sb_2", StateFailed, "runtime lost"
	ended.EndedAt = t0.Add(time.Minute)
	ended.Env, ended.Metadata = map[string]string{}, nil // empty reads back as nil
	if err := s.CreateSandbox(ctx, ended); err != nil {
		t.Fatal(err)
	}
	ended.Env = nil

	tests := []struct {
		name string
		get  func() (any, error)
		want any
	}{
		{"GetTenant", func() (any, error) { return s.GetTenant(ctx, tn.ID) }, tn},
		{"TenantByName", func() (any, error) { return s.TenantByName(ctx, tn.Name) }, tn},
		{"ListTenants", func() (any, error) { return s.ListTenants(ctx) }, []Tenant{tn}},
		{"KeyByHash", func() (any, error) { return s.KeyByHash(ctx, k.Hash) }, k},
		{"ListKeys tenant", func() (any, error) { return s.ListKeys(ctx, tn.ID) }, []Key{k}},
		{"ListKeys all", func() (any, error) { return s.ListKeys(ctx, "") }, []Key{k}},
		{"TokenByHash", func() (any, error) { return s.TokenByHash(ctx, tok.Hash) }, tok},
		{"GetSandbox", func() (any, error) { return s.GetSandbox(ctx, sb.ID) }, sb},
		{"GetSandbox ended", func() (any, error) { return s.GetSandbox(ctx, ended.ID) }, ended},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.get()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("-want +got:\n%s", d)
			}
		})
	}

	// Returned times are UTC, whatever zone they were stored in.
	got, err := s.GetSandbox(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.CreatedAt.Location() != time.UTC || !got.EndedAt.IsZero() {
		t.Errorf("CreatedAt in %v, EndedAt %v; want UTC and zero", got.CreatedAt.Location(), got.EndedAt)
	}
}

func TestUpdateSandbox(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	_, _, _, sb := seed(t, s)

	sb.State, sb.Reason, sb.EndedAt = StateStopped, "deleted", t0.Add(time.Hour)
	sb.Metadata = nil
	sb.Env = map[string]string{"B": "2"}
	if err := s.UpdateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSandbox(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sb, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

func TestConflict(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	tn, k, tok, sb := seed(t, s)

	tn2 := tn
	tn2.ID = "ten_2"
	k2 := k
	k2.ID = "key_2"
	tok2 := tok
	tok2.ID = "tok_2"
	tests := []struct {
		name string
		err  error
	}{
		{"tenant id", s.CreateTenant(ctx, Tenant{ID: tn.ID, Name: "other"})},
		{"tenant name", s.CreateTenant(ctx, tn2)},
		{"key id", s.CreateKey(ctx, Key{ID: k.ID, TenantID: tn.ID, Hash: []byte("other")})},
		{"key hash", s.CreateKey(ctx, k2)},
		{"token id", s.CreateToken(ctx, Token{ID: tok.ID, SandboxID: sb.ID, Hash: []byte("other")})},
		{"token hash", s.CreateToken(ctx, tok2)},
		{"sandbox id", s.CreateSandbox(ctx, sb)},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, ErrConflict) {
			t.Errorf("%s: err = %v, want ErrConflict", tt.name, tt.err)
		}
	}
}

func TestNotFound(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	_, k, tok, sb := seed(t, s)

	missing := sb
	missing.ID = "sb_missing"
	tests := []struct {
		name string
		call func() error
	}{
		{"GetTenant", func() error { _, err := s.GetTenant(ctx, "nope"); return err }},
		{"TenantByName", func() error { _, err := s.TenantByName(ctx, "nope"); return err }},
		{"KeyByHash", func() error { _, err := s.KeyByHash(ctx, []byte("nope")); return err }},
		{"TokenByHash", func() error { _, err := s.TokenByHash(ctx, []byte("nope")); return err }},
		{"GetSandbox", func() error { _, err := s.GetSandbox(ctx, "nope"); return err }},
		{"UpdateSandbox", func() error { return s.UpdateSandbox(ctx, missing) }},
		{"DeleteKey", func() error { return s.DeleteKey(ctx, "nope") }},
		{"CreateKey for missing tenant", func() error {
			return s.CreateKey(ctx, Key{ID: "key_x", TenantID: "nope", Hash: []byte("x")})
		}},
		// Deleted rows are gone.
		{"DeleteKey then KeyByHash", func() error {
			if err := s.DeleteKey(ctx, k.ID); err != nil {
				return err
			}
			_, err := s.KeyByHash(ctx, k.Hash)
			return err
		}},
		{"DeleteTokens then TokenByHash", func() error {
			if err := s.DeleteTokens(ctx, sb.ID); err != nil {
				return err
			}
			_, err := s.TokenByHash(ctx, tok.Hash)
			return err
		}},
	}
	for _, tt := range tests {
		if err := tt.call(); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", tt.name, err)
		}
	}
	// Teardown deletes tokens unconditionally; none left is not an error.
	if err := s.DeleteTokens(ctx, sb.ID); err != nil {
		t.Errorf("DeleteTokens with no tokens: %v", err)
	}
}

// A sandbox's tokens go in the write that ends it, and only then.
func TestEndedSandboxLosesTokens(t *testing.T) {
	ctx := context.Background()
	for _, state := range []string{StateRunning, StateStopped, StateFailed} {
		s, _ := openTest(t)
		_, _, tok, sb := seed(t, s)
		other := tok
		other.ID, other.SandboxID, other.Hash = "tok_other", "sb_other", []byte("other")
		if err := s.CreateToken(ctx, other); err != nil {
			t.Fatal(err)
		}
		sb.State = state
		if err := s.UpdateSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		_, err := s.TokenByHash(ctx, tok.Hash)
		if ended := state != StateRunning; ended != errors.Is(err, ErrNotFound) {
			t.Errorf("sandbox saved as %s: TokenByHash = %v; want the token gone: %v", state, err, ended)
		}
		if _, err := s.TokenByHash(ctx, other.Hash); err != nil {
			t.Errorf("sandbox saved as %s: another sandbox's token: %v", state, err)
		}
	}
}

func TestTokenByHashIgnoresExpiry(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	expired := Token{ID: "tok_old", SandboxID: "sb_1", TenantID: "ten_1", Hash: []byte("old"), ExpiresAt: time.Unix(1, 0).UTC()}
	if err := s.CreateToken(ctx, expired); err != nil {
		t.Fatal(err)
	}
	got, err := s.TokenByHash(ctx, expired.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(expired, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

// listFixture creates 25 sandboxes over two tenants: sb_00..sb_24, tenant
// a for even i, b for odd; every third running, others stopped; metadata
// team=red for i%5==0, team=blue otherwise, and job=i.
func listFixture(t *testing.T, s Store) map[string]Sandbox {
	t.Helper()
	all := map[string]Sandbox{}
	for i := range 25 {
		sb := Sandbox{
			ID:       fmt.Sprintf("sb_%02d", i),
			TenantID: map[bool]string{true: "a", false: "b"}[i%2 == 0],
			State:    map[bool]string{true: StateRunning, false: StateStopped}[i%3 == 0],
			Template: "base", MemoryMB: int64(100 + i),
			Metadata:  map[string]string{"team": map[bool]string{true: "red", false: "blue"}[i%5 == 0], "job": fmt.Sprint(i)},
			CreatedAt: t0.Add(time.Duration(i) * time.Second),
		}
		if err := s.CreateSandbox(context.Background(), sb); err != nil {
			t.Fatal(err)
		}
		all[sb.ID] = sb
	}
	return all
}

func TestListSandboxes(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	all := listFixture(t, s)

	ids := func(is ...int) []string {
		out := []string{}
		for _, i := range is {
			out = append(out, fmt.Sprintf("sb_%02d", i))
		}
		return out
	}
	tests := []struct {
		name string
		f    SandboxFilter
		want []string
	}{
		{"all", SandboxFilter{}, ids(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24)},
		{"tenant", SandboxFilter{TenantID: "b"}, ids(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23)},
		{"tenant and state", SandboxFilter{TenantID: "a", State: StateRunning}, ids(0, 6, 12, 18, 24)},
		{"metadata", SandboxFilter{Metadata: map[string]string{"team": "red"}}, ids(0, 5, 10, 15, 20)},
		{"metadata all pairs", SandboxFilter{Metadata: map[string]string{"team": "red", "job": "15"}}, ids(15)},
		{"metadata mismatch", SandboxFilter{Metadata: map[string]string{"team": "red", "job": "16"}}, ids()},
		{"metadata missing key", SandboxFilter{Metadata: map[string]string{"nope": ""}}, ids()},
		{"tenant state metadata", SandboxFilter{TenantID: "a", State: StateStopped, Metadata: map[string]string{"team": "red"}}, ids(10, 20)},
		{"limit", SandboxFilter{Limit: 3}, ids(0, 1, 2)},
		{"after", SandboxFilter{After: "sb_21"}, ids(22, 23, 24)},
		{"after limit", SandboxFilter{After: "sb_04", Limit: 2}, ids(5, 6)},
		{"after not an id", SandboxFilter{After: "sb_045"}, ids(5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24)},
		{"page of filtered", SandboxFilter{Metadata: map[string]string{"team": "blue"}, After: "sb_04", Limit: 3}, ids(6, 7, 8)},
		{"after last", SandboxFilter{After: "sb_24"}, ids()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListSandboxes(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			gotIDs := []string{}
			for _, sb := range got {
				gotIDs = append(gotIDs, sb.ID)
				if d := cmp.Diff(all[sb.ID], sb); d != "" {
					t.Errorf("%s: -want +got:\n%s", sb.ID, d)
				}
			}
			if d := cmp.Diff(tt.want, gotIDs); d != "" {
				t.Errorf("ids -want +got:\n%s", d)
			}
		})
	}
}

// TestListSandboxesPages walks a filtered listing page by page, as a client
// would, and must see each match exactly once.
func TestListSandboxesPages(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	listFixture(t, s)

	f := SandboxFilter{TenantID: "b", Metadata: map[string]string{"team": "blue"}, Limit: 4}
	var got []string
	for range 10 {
		page, err := s.ListSandboxes(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, sb := range page {
			got = append(got, sb.ID)
		}
		f.After = page[len(page)-1].ID
	}
	want := []string{"sb_01", "sb_03", "sb_07", "sb_09", "sb_11", "sb_13", "sb_17", "sb_19", "sb_21", "sb_23"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

func TestUsage(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for i, st := range []string{StateCreating, StateRunning, StateRunning, StateStopped, StateFailed} {
		sb := Sandbox{ID: fmt.Sprintf("sb_%d", i), TenantID: "a", State: st, MemoryMB: int64(1) << i}
		if err := s.CreateSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	other := Sandbox{ID: "sb_other", TenantID: "b", State: StateRunning, MemoryMB: 1000}
	if err := s.CreateSandbox(ctx, other); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tenant string
		n      int
		mem    int64
	}{
		{"a", 3, 1 + 2 + 4},
		{"b", 1, 1000},
		{"none", 0, 0},
	}
	for _, tt := range tests {
		n, mem, err := s.Usage(ctx, tt.tenant)
		if err != nil {
			t.Fatal(err)
		}
		if n != tt.n || mem != tt.mem {
			t.Errorf("Usage(%q) = %d, %d; want %d, %d", tt.tenant, n, mem, tt.n, tt.mem)
		}
	}
}

// TestConcurrentWrites creates and updates sandboxes from 100 goroutines at
// once, with readers in between: SQLite's single writer must never surface
// as SQLITE_BUSY.
func TestConcurrentWrites(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	for i := range n {
		wg.Go(func() {
			sb := Sandbox{ID: fmt.Sprintf("sb_%03d", i), TenantID: "a", State: StateCreating, MemoryMB: 10,
				Metadata: map[string]string{"i": fmt.Sprint(i)}}
			if err := s.CreateSandbox(ctx, sb); err != nil {
				errs <- err
				return
			}
			if _, _, err := s.Usage(ctx, "a"); err != nil {
				errs <- err
			}
			sb.State = StateRunning
			if err := s.UpdateSandbox(ctx, sb); err != nil {
				errs <- err
			}
			if _, err := s.ListSandboxes(ctx, SandboxFilter{TenantID: "a", Limit: 5}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, mem, err := s.Usage(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	running, err := s.ListSandboxes(ctx, SandboxFilter{State: StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	if got != n || mem != 10*n || len(running) != n {
		t.Errorf("after %d goroutines: usage %d sandboxes %d MB, %d running", n, got, mem, len(running))
	}
}

// TestReopen closes the store as a daemon restart would and finds every
// record in the reopened file; migrations run again without harm.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	tn, k, tok, sb := seed(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = OpenSQLite(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	gotT, err1 := s.GetTenant(ctx, tn.ID)
	gotK, err2 := s.KeyByHash(ctx, k.Hash)
	gotTok, err3 := s.TokenByHash(ctx, tok.Hash)
	gotSB, err4 := s.GetSandbox(ctx, sb.ID)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]any{tn, k, tok, sb}, []any{gotT, gotK, gotTok, gotSB}); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
	var v int
	if err := s.db.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil || v != len(migrations) {
		t.Errorf("schema_version = %d, %v; want %d", v, err, len(migrations))
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	s, path := openTest(t)
	if _, err := s.exec(context.Background(), `UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	if s2, err := OpenSQLite(path); err == nil {
		s2.Close()
		t.Fatal("opened a database from a newer binary")
	}
}

func TestFileMode(t *testing.T) {
	s, path := openTest(t)
	seed(t, s)
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s mode %v, want 0600", filepath.Base(p), m)
		}
	}
}

func TestPragmas(t *testing.T) {
	s, _ := openTest(t)
	want := map[string]string{"journal_mode": "wal", "foreign_keys": "1", "synchronous": "1", "busy_timeout": "5000"}
	got := map[string]string{}
	for p := range want {
		var v string
		if err := s.db.QueryRow(`PRAGMA ` + p).Scan(&v); err != nil {
			t.Fatal(err)
		}
		got[p] = v
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

// TestExpiry covers the reaper's two questions: what has expired, and when
// the next running sandbox will.
func TestExpiry(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for i, st := range []string{StateStopped, StateRunning, StateRunning, StateFailed, StateRunning} {
		sb := Sandbox{ID: fmt.Sprintf("sb_%d", i), TenantID: "a", State: st, ExpiresAt: t0.Add(time.Duration(i) * time.Second)}
		if err := s.CreateSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ListSandboxes(ctx, SandboxFilter{State: StateRunning, ExpiredBy: t0.Add(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sb := range got {
		ids = append(ids, sb.ID)
	}
	if d := cmp.Diff([]string{"sb_1", "sb_2"}, ids); d != "" {
		t.Errorf("expired by t0+2s (-want +got):\n%s", d)
	}
	for _, tc := range []struct {
		after time.Time
		want  time.Time
	}{
		{t0.Add(-time.Hour), t0.Add(time.Second)}, // sb_0 is stopped: not counted
		{t0.Add(time.Second), t0.Add(2 * time.Second)},
		{t0.Add(2 * time.Second), t0.Add(4 * time.Second)}, // sb_3 failed
		{t0.Add(4 * time.Second), time.Time{}},
	} {
		next, err := s.NextExpiry(ctx, tc.after)
		if err != nil {
			t.Fatal(err)
		}
		if !next.Equal(tc.want) {
			t.Errorf("NextExpiry(%v) = %v, want %v", tc.after, next, tc.want)
		}
	}
}

func TestNetEvents(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	sb := Sandbox{ID: "sb_1", TenantID: "a", State: StateRunning, Network: `{"mode":"allowlist","allow":["pypi.org"]}`}
	if err := s.CreateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	var in []NetEvent
	for i := range 5 {
		in = append(in, NetEvent{SandboxID: []string{"sb_1", "sb_2"}[i%2], TenantID: "a", Time: t0.Add(time.Duration(i) * time.Second), Data: []byte(fmt.Sprintf(`{"n":%d}`, i))})
	}
	if err := s.AppendNetEvents(ctx, in[:2]); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendNetEvents(ctx, in[2:]); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err := OpenSQLite(path) // the log outlives the process
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.NetEvents(ctx, "sb_1", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var data []string
	for _, e := range got {
		data = append(data, string(e.Data))
		if e.SandboxID != "sb_1" || e.TenantID != "a" {
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
	back, err := s.GetSandbox(ctx, "sb_1")
	if err != nil || back.Network != sb.Network {
		t.Errorf("network policy round trip: %q, %v", back.Network, err)
	}
}
