package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// testDisks: snapshots and volumes round-trip, are per tenant and kind,
// and count in their tenant's storage from create to delete.
func testDisks(t *testing.T, h *harness) {
	s := h.s
	snap := sandboxrec.Disk{Kind: sandboxrec.DiskSnapshot, TenantID: "a", Name: "s1", Node: "local", Sandbox: "sb-1",
		Bytes: 5 << 20, CreatedAt: t0, Spec: `{"template":"base"}`}
	vol := sandboxrec.Disk{Kind: sandboxrec.DiskVolume, TenantID: "a", Name: "s1", Node: "n2", Bytes: 100 << 20, CreatedAt: t0}
	other := snap
	other.TenantID = "b"
	for _, d := range []sandboxrec.Disk{snap, vol, other} {
		must(t, s.CreateDisk(ctx, d))
	}
	if err := s.CreateDisk(ctx, snap); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second snapshot s1: %v, want ErrConflict", err)
	}
	got, err := s.GetDisk(ctx, sandboxrec.DiskSnapshot, "a", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(t0) {
		t.Errorf("created_at %v, want %v", got.CreatedAt, t0)
	}
	got.CreatedAt = t0
	if d := cmp.Diff(snap, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if _, err := s.GetDisk(ctx, sandboxrec.DiskSnapshot, "c", "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant's: %v, want ErrNotFound", err)
	}
	names := func(kind, tenant string) []string {
		l, err := s.ListDisks(ctx, kind, tenant)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range l {
			out = append(out, d.TenantID+"/"+d.Name)
		}
		return out
	}
	if d := cmp.Diff([]string{"a/s1", "b/s1"}, names(sandboxrec.DiskSnapshot, "")); d != "" {
		t.Errorf("all snapshots (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"a/s1"}, names(sandboxrec.DiskVolume, "a")); d != "" {
		t.Errorf("a's volumes (-want +got):\n%s", d)
	}
	if n, err := s.StorageBytes(ctx, "a"); err != nil || n != 105<<20 {
		t.Errorf("storage of a: %d, %v; want %d", n, err, 105<<20)
	}
	must(t, s.DeleteDisk(ctx, sandboxrec.DiskSnapshot, "a", "s1"))
	if err := s.DeleteDisk(ctx, sandboxrec.DiskSnapshot, "a", "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted twice: %v, want ErrNotFound", err)
	}
	if n, err := s.StorageBytes(ctx, "a"); err != nil || n != 100<<20 {
		t.Errorf("storage of a after delete: %d, %v; want %d", n, err, 100<<20)
	}
	must(t, s.MoveDisk(ctx, sandboxrec.DiskVolume, "a", "s1", "n3"))
	if err := s.MoveDisk(ctx, sandboxrec.DiskVolume, "b", "s1", "n3"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("move of another tenant's volume: %v, want ErrNotFound", err)
	}
	s = h.reopen(t)
	if d := cmp.Diff([]string{"a/s1"}, names(sandboxrec.DiskVolume, "")); d != "" {
		t.Errorf("volumes after reopen (-want +got):\n%s", d)
	}
	if v, err := s.GetDisk(ctx, sandboxrec.DiskVolume, "a", "s1"); err != nil || v.Node != "n3" || v.Bytes != 100<<20 {
		t.Errorf("moved volume: %+v, %v", v, err)
	}
}

// testPausedIsLive: a paused sandbox counts in its tenant's usage and
// its expiry is the reaper's to see, as a running one's.
func testPausedIsLive(t *testing.T, h *harness) {
	s := h.s
	for i, st := range []string{sandboxrec.Running, sandboxrec.Paused, sandboxrec.Stopped} {
		must(t, s.CreateSandbox(ctx, sandboxrec.Sandbox{ID: "sb_" + st, TenantID: "a", State: st, MemoryMB: 100,
			ExpiresAt: t0.Add(time.Duration(3-i) * time.Minute), Lifecycle: `{"paused_at":1}`}))
	}
	if n, mem, err := s.Usage(ctx, "a"); err != nil || n != 2 || mem != 200 {
		t.Errorf("usage: %d sandboxes, %d MB, %v; want 2, 200", n, mem, err)
	}
	next, err := s.NextExpiry(ctx, t0)
	if err != nil || !next.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("next expiry %v, %v; want the paused one's, %v", next, err, t0.Add(2*time.Minute))
	}
	got, err := s.GetSandbox(ctx, "sb_paused")
	if err != nil || got.State != sandboxrec.Paused || got.Lifecycle != `{"paused_at":1}` {
		t.Errorf("paused sandbox read back: %+v, %v", got, err)
	}
}
