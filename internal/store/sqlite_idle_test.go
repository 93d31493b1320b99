package store

import (
	"context"
	"testing"
	"time"
)

// Idle timers saved are read back for live sandboxes only, and a whole-row
// write of the sandbox leaves them alone.
func TestIdleSince(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	_, _, _, sb := seed(t, s)
	if got, err := s.IdleSince(ctx); err != nil || len(got) != 0 {
		t.Fatalf("before any save: %v, %v", got, err)
	}
	at := time.Unix(1_700_000_000, 123).UTC()
	if err := s.SaveIdle(ctx, map[string]time.Time{sb.ID: at, "sb-none": at}); err != nil {
		t.Fatal(err)
	}
	sb.Metadata = map[string]string{"k": "v"}
	if err := s.UpdateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if got, err := s.IdleSince(ctx); err != nil || len(got) != 1 || !got[sb.ID].Equal(at) {
		t.Fatalf("after a save and a row update: %v, %v", got, err)
	}
	sb.State, sb.EndedAt = StateStopped, at
	if err := s.UpdateSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if got, err := s.IdleSince(ctx); err != nil || len(got) != 0 {
		t.Fatalf("stopped: %v, %v", got, err)
	}
}
