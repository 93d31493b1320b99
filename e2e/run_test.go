package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/client"
)

// TestRunUsesServer: with a server reachable, `airlock run` creates its
// sandbox there (and deletes it), stdin and exit code included.
func TestRunUsesServer(t *testing.T) {
	s := startServer(t, "")
	cmd := exec.Command(s.bin, "run", "--memory", "256M", "--", "sh", "-c", "read l; echo got $l; exit 5")
	cmd.Env = append(os.Environ(), "AIRLOCK_URL="+s.url, "AIRLOCK_API_KEY="+s.adminKey)
	cmd.Stdin = strings.NewReader("line\n")
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 || string(out) != "got line\n" {
		t.Fatalf("airlock run: %v, output %q", err, out)
	}
	page := must[client.Page](t)(s.admin().ListSandboxes(ctx, client.ListOptions{}))
	if len(page.Sandboxes) != 1 || page.Sandboxes[0].State != client.StateStopped || page.Sandboxes[0].Limits.MemoryMB != 256 {
		t.Errorf("the server's sandboxes after run: %+v", page.Sandboxes)
	}
}
