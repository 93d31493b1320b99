package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// forkBomb is the classic one, in bash (which retries a failed fork
// rather than give up): each call forks two more and returns, so every
// member is soon reparented to the init.
const forkBomb = `bomb() { bomb | bomb & }; bomb`

// TestPidLimitIsAnAnswer pins an outage: an exec in a sandbox at its pid
// limit answered 503, and a fork bomb outlived the exec that started it.
// Now such an exec is a 429 pid_limit, the bomb dies with its exec's tree
// (found though every member was reparented), and destroy works
// throughout.
func TestPidLimitIsAnAnswer(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	for _, how := range []struct {
		name    string
		timeout time.Duration
	}{{"ends", 0}, {"times out", 3 * time.Second}} {
		t.Run("exec "+how.name, func(t *testing.T) {
			sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Pids: 64}))
			cmd := forkBomb
			if how.timeout > 0 {
				cmd += "; sleep 60" // the root stays until the timeout
			}
			done := make(chan error, 1)
			go func() {
				_, err := c.Exec(ctx, sb.ID, client.ExecRequest{Cmd: []string{"bash", "-c", cmd}, Timeout: how.timeout})
				done <- err
			}()
			// While the bomb holds every pid, a new command is refused
			// with the reason, never a 503. (A bomb whose exec ends at
			// once dies at once.)
			refused := how.timeout == 0
			for deadline := time.Now().Add(how.timeout); !refused && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				_, err := c.Exec(ctx, sb.ID, client.ExecRequest{Cmd: []string{"true"}})
				var ae *client.Error
				switch {
				case err == nil:
				case errors.As(err, &ae) && ae.Status == 429 && ae.Code == "pid_limit" && strings.Contains(ae.Message, "pid limit"):
					refused = true
				default:
					name, _ := os.Readlink(filepath.Join(s.dataDir, "ids", sb.ID))
					log, _ := os.ReadFile(filepath.Join(s.dataDir, "sandboxes", name, "init.log"))
					_, again := c.Exec(ctx, sb.ID, client.ExecRequest{Cmd: []string{"true"}})
					t.Fatalf("exec at the pid limit: %v, want 429 pid_limit (init.log: %s; next exec: %v)", err, log, again)
				}
			}
			if !refused {
				t.Error("no exec was refused while the fork bomb ran")
			}
			if err := <-done; err != nil {
				t.Fatalf("the bomb's exec: %v", err)
			}
			// Its tree goes with it: soon only the init and the command
			// counting are left.
			var left string
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				res, err := c.Exec(ctx, sb.ID, client.ExecRequest{Command: "ls /proc | grep -c '^[0-9]'"})
				if err == nil {
					left = strings.TrimSpace(res.Stdout)
					// The init, sh, ls and grep.
					if n, _ := strconv.Atoi(left); n > 0 && n <= 4 {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("10 s after its exec ended the bomb still runs: %s processes (%v)", left, err)
				}
			}
			if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
				t.Fatalf("destroy: %v", err)
			}
		})
	}
	t.Run("destroy during the bomb", func(t *testing.T) {
		sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{Pids: 64}))
		go c.Exec(ctx, sb.ID, client.ExecRequest{Cmd: []string{"bash", "-c", forkBomb + "; sleep 60"}})
		time.Sleep(time.Second)
		if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
			t.Fatalf("destroy during a fork bomb: %v", err)
		}
	})
	assertNoSandboxesLeft(t, s)
}
