package client

import (
	"testing"
	"time"
)

// TestEndedErrorSaysHowAndWhen pins the words a person reads when a call
// hits a sandbox that has ended: which, how, how long ago, and why.
func TestEndedErrorSaysHowAndWhen(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		sb   Sandbox
		want string
	}{
		{Sandbox{ID: "sb-1", State: StateStopped, EndedAt: now.Add(-3 * time.Minute)}, "sandbox sb-1 has ended (stopped 3m ago)"},
		{Sandbox{ID: "sb-1", State: StateStopped, Reason: "expired", EndedAt: now.Add(-90 * time.Second)}, "sandbox sb-1 has ended (expired 1m ago)"},
		{Sandbox{ID: "sb-1", State: StateStopped, Reason: "idle", EndedAt: now.Add(-5 * time.Hour)}, "sandbox sb-1 has ended (stopped 5h ago: idle)"},
		{Sandbox{ID: "sb-1", State: StateFailed, Reason: "lost", EndedAt: now.Add(-72 * time.Hour)}, "sandbox sb-1 has ended (failed 3d ago: lost)"},
		{Sandbox{ID: "sb-1", State: StateStopped, EndedAt: now.Add(-20 * time.Second)}, "sandbox sb-1 has ended (stopped 20s ago)"},
		{Sandbox{ID: "sb-1", State: StateStopped, EndedAt: now}, "sandbox sb-1 has ended (stopped 0s ago)"},
		// A server from before ended_at: no time, still the how.
		{Sandbox{ID: "sb-1", State: StateStopped}, "sandbox sb-1 has ended (stopped)"},
	} {
		if got := (&EndedError{Sandbox: tc.sb, now: now}).Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.sb, got, tc.want)
		}
	}
}
