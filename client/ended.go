package client

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// EndedError says that a sandbox a call needed has ended, and how and
// when: "sandbox sb-1 has ended (expired 3m ago)". The server's own
// answer to such a call is a bare conflict or not-found; SandboxEnded
// reads the sandbox's record to say more.
type EndedError struct {
	Sandbox Sandbox
	now     time.Time // for tests; zero: the time of Error
}

func (e *EndedError) Error() string {
	sb := e.Sandbox
	how, why := sb.State, sb.Reason
	if why == "expired" {
		how, why = "expired", ""
	}
	if !sb.EndedAt.IsZero() {
		now := e.now
		if now.IsZero() {
			now = time.Now()
		}
		how += " " + agoText(now.Sub(sb.EndedAt))
	}
	if why != "" {
		how += ": " + why
	}
	return fmt.Sprintf("sandbox %s has ended (%s)", sb.ID, how)
}

// SandboxEnded explains, after a call on sandbox id failed with a
// not-found or conflict answer, whether the sandbox itself is the cause:
// an *EndedError if it has stopped or failed, the server's not-found
// answer if it knows no sandbox id (destroyed and forgotten, or not the
// caller's), nil if it still runs (what failed was something in it) or
// its record cannot be read.
func (c *Client) SandboxEnded(ctx context.Context, id string) error {
	sb, err := c.GetSandbox(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return err
	case err != nil || sb.State == StateRunning || sb.State == StateCreating:
		return nil
	}
	return &EndedError{Sandbox: sb}
}

// agoText is how long ago a duration was, short and in whole units:
// 0s ago, 45s ago, 3m ago, 5h ago, 2d ago.
func agoText(d time.Duration) string {
	d = max(d, 0) // a server clock a little ahead
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}
