package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/store"
)

// testLiveConns: connections written open are handed back once, after a
// restart too, and those closed are not.
func testLiveConns(t *testing.T, h *harness) {
	s := h.s
	if got, err := s.TakeLiveConns(ctx); err != nil || got != nil {
		t.Fatalf("none open: %+v, %v", got, err)
	}
	c := func(id string, d time.Duration) store.LiveConn {
		return store.LiveConn{ID: id, SandboxID: "sb_1", Kind: "egress", OpenedAt: t0.Add(d), Data: []byte(`{"host":"` + id + `"}`)}
	}
	must(t, s.UpdateLiveConns(ctx, []store.LiveConn{c("c3", 3), c("c1", 1), c("c2", 2)}, nil))
	must(t, s.UpdateLiveConns(ctx, nil, []string{"c2", "c_unknown"}))
	replaced := c("c1", 0)
	replaced.Kind = "port"
	must(t, s.UpdateLiveConns(ctx, []store.LiveConn{replaced}, nil))
	must(t, s.UpdateLiveConns(ctx, nil, nil))
	s = h.restart(t)
	got, err := s.TakeLiveConns(ctx)
	must(t, err)
	if d := cmp.Diff([]store.LiveConn{replaced, c("c3", 3)}, got); d != "" {
		t.Errorf("left open, oldest first (-want +got):\n%s", d)
	}
	if again, err := s.TakeLiveConns(ctx); err != nil || again != nil {
		t.Errorf("taken twice: %+v, %v", again, err)
	}
}
