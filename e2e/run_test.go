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

// TestSecretsCLI: `airlock secrets set` reads the value from stdin (set
// again rotates), `ls` never shows it, `run --secret` binds it, `rm`
// deletes it.
func TestSecretsCLI(t *testing.T) {
	s := startServer(t, "")
	cli := func(stdin string, args ...string) (string, string, error) {
		cmd := exec.Command(s.bin, args...)
		cmd.Env = append(os.Environ(), "AIRLOCK_URL="+s.url, "AIRLOCK_API_KEY="+s.adminKey)
		cmd.Stdin = strings.NewReader(stdin)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return string(out), stderr.String(), err
	}
	if _, stderr, err := cli("sk-cli-value\n", "secrets", "set", "GH_TOKEN", "--host", "api.github.test", "--header", "Authorization", "--format", "token {value}"); err != nil {
		t.Fatalf("secrets set: %v: %s", err, stderr)
	}
	if _, stderr, err := cli("sk-cli-rotated\n", "secrets", "set", "GH_TOKEN"); err != nil || !strings.Contains(stderr, "rotated") {
		t.Errorf("secrets set again: %v: %s", err, stderr)
	}
	out, _, err := cli("", "secrets", "ls")
	if err != nil || !strings.Contains(out, "GH_TOKEN") || !strings.Contains(out, "api.github.test") || strings.Contains(out, "sk-cli") {
		t.Errorf("secrets ls: %v: %q", err, out)
	}
	out, stderr, err := cli("", "run", "--secret", "GH_TOKEN", "--", "sh", "-c", "echo $GH_TOKEN")
	if err != nil || !strings.HasPrefix(out, "airlock-ph-") {
		t.Errorf("run --secret: %v: %q %s", err, out, stderr)
	}
	if _, _, err := cli("", "secrets", "set", "EMPTY", "--host", "a.test"); err == nil {
		t.Errorf("secrets set with no value on stdin succeeded")
	}
	if _, stderr, err := cli("", "secrets", "rm", "GH_TOKEN"); err != nil {
		t.Errorf("secrets rm: %v: %s", err, stderr)
	}
	if list := must[[]client.Secret](t)(s.admin().ListSecrets(ctx)); len(list) != 0 {
		t.Errorf("after rm: %+v", list)
	}
}
