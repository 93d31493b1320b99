package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

func testUpdateSandbox(t *testing.T, h *harness) {
	s := h.s
	_, _, _, sb := seed(t, s)
	sb.State, sb.Reason, sb.EndedAt = sandboxrec.Stopped, "deleted", t0.Add(time.Hour)
	sb.Metadata = nil
	sb.Env = map[string]string{"B": "2"}
	sb.Network, sb.IdleTimeoutS, sb.Node = `{"mode":"none"}`, 60, "node-2"
	must(t, s.UpdateSandbox(ctx, sb))
	got, err := s.GetSandbox(ctx, sb.ID)
	must(t, err)
	if d := cmp.Diff(sb, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

// UpdateSandboxSoon: every read through the store sees it at once, a later
// write wins over it, and it is durable once the store is closed.
func testUpdateSandboxSoon(t *testing.T, h *harness) {
	s := h.s
	must(t, s.CreateTenant(ctx, tenancy.Tenant{ID: "ten_a", Name: "a"}))
	mk := func(id string) sandboxrec.Sandbox {
		sb := sandboxrec.Sandbox{ID: id, TenantID: "ten_a", State: sandboxrec.Creating, Template: "base", CPUs: 1, MemoryMB: 64,
			CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		must(t, s.CreateSandbox(ctx, sb))
		return sb
	}
	sb := mk("sb-soon")
	sb.State = sandboxrec.Running
	must(t, s.UpdateSandboxSoon(ctx, sb))
	if got, err := s.GetSandbox(ctx, sb.ID); err != nil || got.State != sandboxrec.Running {
		t.Errorf("GetSandbox: %s, %v", got.State, err)
	}
	if n, _, err := s.Usage(ctx, "ten_a"); err != nil || n != 1 {
		t.Errorf("Usage: %d, %v", n, err)
	}
	if l, err := s.ListSandboxes(ctx, sandboxrec.Filter{State: sandboxrec.Running}); err != nil || len(l) != 1 {
		t.Errorf("ListSandboxes running: %d, %v", len(l), err)
	}
	if c, err := s.CountSandboxes(ctx); err != nil || c[sandboxrec.Running] != 1 {
		t.Errorf("CountSandboxes: %v, %v", c, err)
	}
	if next, err := s.NextExpiry(ctx, t0); err != nil || !next.Equal(t0.Add(time.Hour)) {
		t.Errorf("NextExpiry: %v, %v", next, err)
	}

	// A later write wins, however the deferred one is timed.
	sb2 := mk("sb-race")
	for i := range 20 {
		sb2.State = sandboxrec.Running
		must(t, s.UpdateSandboxSoon(ctx, sb2))
		sb2.State, sb2.Reason = sandboxrec.Stopped, fmt.Sprint("deleted ", i)
		must(t, s.UpdateSandbox(ctx, sb2))
		time.Sleep(time.Duration(i%3) * time.Millisecond)
		if got, _ := s.GetSandbox(ctx, sb2.ID); got.State != sandboxrec.Stopped || got.Reason != sb2.Reason {
			t.Fatalf("round %d: a deferred write overtook a later one: %s %q", i, got.State, got.Reason)
		}
	}

	// Durable once closed: the deferred writes reach the database.
	sb3 := mk("sb-close")
	sb3.State, sb3.Metadata = sandboxrec.Running, map[string]string{"k": "v"}
	must(t, s.UpdateSandboxSoon(ctx, sb3))
	s = h.restart(t)
	for _, want := range []sandboxrec.Sandbox{sb, sb3} {
		got, err := s.GetSandbox(ctx, want.ID)
		must(t, err)
		if d := cmp.Diff(want.State, got.State); d != "" || !cmp.Equal(want.Metadata, got.Metadata) {
			t.Errorf("%s after reopening: %s %v, want %s %v", want.ID, got.State, got.Metadata, want.State, want.Metadata)
		}
	}
	if got, _ := s.GetSandbox(ctx, sb2.ID); got.State != sandboxrec.Stopped {
		t.Errorf("%s after reopening: %s", sb2.ID, got.State)
	}
}

// listFixture creates 25 sandboxes over two tenants: sb_00..sb_24, tenant
// a for even i, b for odd; every third running, others stopped; metadata
// team=red for i%5==0, team=blue otherwise, and job=i.
func listFixture(t *testing.T, s store.Store) map[string]sandboxrec.Sandbox {
	t.Helper()
	all := map[string]sandboxrec.Sandbox{}
	for i := range 25 {
		sb := sandboxrec.Sandbox{
			ID:       fmt.Sprintf("sb_%02d", i),
			TenantID: map[bool]string{true: "a", false: "b"}[i%2 == 0],
			State:    map[bool]string{true: sandboxrec.Running, false: sandboxrec.Stopped}[i%3 == 0],
			Template: "base", MemoryMB: int64(100 + i),
			Metadata:  map[string]string{"team": map[bool]string{true: "red", false: "blue"}[i%5 == 0], "job": fmt.Sprint(i)},
			CreatedAt: t0.Add(time.Duration(i) * time.Second),
			ExpiresAt: t0.Add(time.Duration(i) * time.Minute),
		}
		must(t, s.CreateSandbox(ctx, sb))
		all[sb.ID] = sb
	}
	return all
}

func testListSandboxes(t *testing.T, h *harness) {
	s := h.s
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
		f    sandboxrec.Filter
		want []string
	}{
		{"all", sandboxrec.Filter{}, ids(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24)},
		{"tenant", sandboxrec.Filter{TenantID: "b"}, ids(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23)},
		{"tenant and state", sandboxrec.Filter{TenantID: "a", State: sandboxrec.Running}, ids(0, 6, 12, 18, 24)},
		{"metadata", sandboxrec.Filter{Metadata: map[string]string{"team": "red"}}, ids(0, 5, 10, 15, 20)},
		{"metadata all pairs", sandboxrec.Filter{Metadata: map[string]string{"team": "red", "job": "15"}}, ids(15)},
		{"metadata mismatch", sandboxrec.Filter{Metadata: map[string]string{"team": "red", "job": "16"}}, ids()},
		{"metadata missing key", sandboxrec.Filter{Metadata: map[string]string{"nope": ""}}, ids()},
		{"tenant state metadata", sandboxrec.Filter{TenantID: "a", State: sandboxrec.Stopped, Metadata: map[string]string{"team": "red"}}, ids(10, 20)},
		{"expired by", sandboxrec.Filter{ExpiredBy: t0.Add(3 * time.Minute)}, ids(0, 1, 2, 3)},
		{"limit", sandboxrec.Filter{Limit: 3}, ids(0, 1, 2)},
		{"after", sandboxrec.Filter{After: "sb_21"}, ids(22, 23, 24)},
		{"after limit", sandboxrec.Filter{After: "sb_04", Limit: 2}, ids(5, 6)},
		{"after not an id", sandboxrec.Filter{After: "sb_045"}, ids(5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24)},
		{"page of filtered", sandboxrec.Filter{Metadata: map[string]string{"team": "blue"}, After: "sb_04", Limit: 3}, ids(6, 7, 8)},
		{"after last", sandboxrec.Filter{After: "sb_24"}, ids()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListSandboxes(ctx, tt.f)
			must(t, err)
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
	// Ids sort in byte order, whatever the server's locale.
	for _, id := range []string{"sb_Z", "sb_a", "sb__"} {
		must(t, s.CreateSandbox(ctx, sandboxrec.Sandbox{ID: id, TenantID: "c", State: sandboxrec.Running}))
	}
	got, err := s.ListSandboxes(ctx, sandboxrec.Filter{TenantID: "c"})
	must(t, err)
	var gotIDs []string
	for _, sb := range got {
		gotIDs = append(gotIDs, sb.ID)
	}
	if d := cmp.Diff([]string{"sb_Z", "sb__", "sb_a"}, gotIDs); d != "" {
		t.Errorf("byte order (-want +got):\n%s", d)
	}
}

// testListSandboxesPages walks a filtered listing page by page, as a
// client would, and must see each match exactly once.
func testListSandboxesPages(t *testing.T, h *harness) {
	s := h.s
	listFixture(t, s)
	f := sandboxrec.Filter{TenantID: "b", Metadata: map[string]string{"team": "blue"}, Limit: 4}
	var got []string
	for range 10 {
		page, err := s.ListSandboxes(ctx, f)
		must(t, err)
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

func testUsage(t *testing.T, h *harness) {
	s := h.s
	for i, st := range []string{sandboxrec.Creating, sandboxrec.Running, sandboxrec.Running, sandboxrec.Stopped, sandboxrec.Failed} {
		must(t, s.CreateSandbox(ctx, sandboxrec.Sandbox{ID: fmt.Sprintf("sb_%d", i), TenantID: "a", State: st, MemoryMB: int64(1) << i}))
	}
	must(t, s.CreateSandbox(ctx, sandboxrec.Sandbox{ID: "sb_other", TenantID: "b", State: sandboxrec.Running, MemoryMB: 1000}))
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
		must(t, err)
		if n != tt.n || mem != tt.mem {
			t.Errorf("Usage(%q) = %d, %d; want %d, %d", tt.tenant, n, mem, tt.n, tt.mem)
		}
	}
}

// testExpiry covers the reaper's two questions: what has expired, and when
// the next running sandbox will.
func testExpiry(t *testing.T, h *harness) {
	s := h.s
	for i, st := range []string{sandboxrec.Stopped, sandboxrec.Running, sandboxrec.Running, sandboxrec.Failed, sandboxrec.Running} {
		must(t, s.CreateSandbox(ctx, sandboxrec.Sandbox{ID: fmt.Sprintf("sb_%d", i), TenantID: "a", State: st, ExpiresAt: t0.Add(time.Duration(i) * time.Second)}))
	}
	got, err := s.ListSandboxes(ctx, sandboxrec.Filter{State: sandboxrec.Running, ExpiredBy: t0.Add(2 * time.Second)})
	must(t, err)
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
		must(t, err)
		if !next.Equal(tc.want) {
			t.Errorf("NextExpiry(%v) = %v, want %v", tc.after, next, tc.want)
		}
	}
}

func testCountSandboxes(t *testing.T, h *harness) {
	s := h.s
	if got, err := s.CountSandboxes(ctx); err != nil || len(got) != 0 {
		t.Errorf("empty store: %v, %v", got, err)
	}
	_, _, _, sb := seed(t, s)
	for i, state := range []string{sandboxrec.Running, sandboxrec.Stopped, sandboxrec.Stopped, sandboxrec.Failed} {
		sb.ID, sb.State = "sb_x"+string(rune('a'+i)), state
		must(t, s.CreateSandbox(ctx, sb))
	}
	got, err := s.CountSandboxes(ctx)
	must(t, err)
	// seed's own sandbox is running.
	if d := cmp.Diff(map[string]int{sandboxrec.Running: 2, sandboxrec.Stopped: 2, sandboxrec.Failed: 1}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// testConcurrentSandboxWrites creates and updates sandboxes from 100
// goroutines at once, with readers in between: no writer may fail for
// another's lock.
func testConcurrentSandboxWrites(t *testing.T, h *harness) {
	s := h.s
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	for i := range n {
		wg.Go(func() {
			sb := sandboxrec.Sandbox{ID: fmt.Sprintf("sb_%03d", i), TenantID: "a", State: sandboxrec.Creating, MemoryMB: 10,
				Metadata: map[string]string{"i": fmt.Sprint(i)}}
			if err := s.CreateSandbox(ctx, sb); err != nil {
				errs <- err
				return
			}
			if _, _, err := s.Usage(ctx, "a"); err != nil {
				errs <- err
			}
			sb.State = sandboxrec.Running
			if err := s.UpdateSandbox(ctx, sb); err != nil {
				errs <- err
			}
			if _, err := s.ListSandboxes(ctx, sandboxrec.Filter{TenantID: "a", Limit: 5}); err != nil {
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
	must(t, err)
	running, err := s.ListSandboxes(ctx, sandboxrec.Filter{State: sandboxrec.Running})
	must(t, err)
	if got != n || mem != 10*n || len(running) != n {
		t.Errorf("after %d goroutines: usage %d sandboxes %d MB, %d running", n, got, mem, len(running))
	}
}

// testReopen closes the store as a daemon restart would and finds every
// record in the reopened database; migrations run again without harm.
func testReopen(t *testing.T, h *harness) {
	tn, k, tok, sb := seed(t, h.s)
	s := h.restart(t)
	gotT, err1 := s.GetTenant(ctx, tn.ID)
	gotK, err2 := s.KeyByHash(ctx, k.Hash)
	gotTok, err3 := s.TokenByHash(ctx, tok.Hash)
	gotSB, err4 := s.GetSandbox(ctx, sb.ID)
	must(t, errors.Join(err1, err2, err3, err4))
	if d := cmp.Diff([]any{tn, k, tok, sb}, []any{gotT, gotK, gotTok, gotSB}); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

// Idle timers saved are read back for live sandboxes only, and a whole-row
// write of the sandbox leaves them alone.
func testIdleSince(t *testing.T, h *harness) {
	s := h.s
	_, _, _, sb := seed(t, s)
	if got, err := s.IdleSince(ctx); err != nil || len(got) != 0 {
		t.Fatalf("before any save: %v, %v", got, err)
	}
	at := time.Unix(1_700_000_000, 123).UTC()
	must(t, s.SaveIdle(ctx, map[string]time.Time{sb.ID: at, "sb-none": at}))
	sb.Metadata = map[string]string{"k": "v"}
	must(t, s.UpdateSandbox(ctx, sb))
	if got, err := s.IdleSince(ctx); err != nil || len(got) != 1 || !got[sb.ID].Equal(at) {
		t.Fatalf("after a save and a row update: %v, %v", got, err)
	}
	sb.State, sb.EndedAt = sandboxrec.Stopped, at
	must(t, s.UpdateSandbox(ctx, sb))
	if got, err := s.IdleSince(ctx); err != nil || len(got) != 0 {
		t.Fatalf("stopped: %v, %v", got, err)
	}
}
