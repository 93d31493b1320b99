package e2e

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestBenchTasks runs `airlock bench tasks -n 5` as a person would: five
// tasks, each calling a model mock on the fake internet with a bound key,
// end with the bench's checks passed (exit 0), and it prints their times
// and their cost under the bench's price table (5 x $0.0045).
func TestBenchTasks(t *testing.T) {
	linuxtest.Require(t)
	testenv.LookPath(t, "ip", "iproute2")
	bin, _ := linuxtest.Build(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The bench on its own server and fake internet, never the server
	// the environment names.
	cmd := exec.CommandContext(ctx, bin, "bench", "tasks", "-n", "5", "-pool", "1")
	cmd.Env = append(os.Environ(), "AIRLOCK_URL=", "AIRLOCK_API_KEY=", "AIRLOCK_DATA_DIR=")
	// On the deadline, let it clean up its sandboxes and namespace.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("airlock bench tasks -n 5: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	t.Logf("airlock bench tasks -n 5:\n%s", out.String())
	dur := `\d+\.\d\dms`
	for _, want := range []string{
		`(?m)^step +p50 +p95 +p99 +max +all done$`,
		`(?m)^POST /v1/tasks( +` + dur + `){4}$`,
		`(?m)^task, created_at -> ended_at( +` + dur + `){5}$`,
		`(?m)^  started_at -> ended_at( +` + dur + `){4}$`,
		`(?m)^cost_usd: \$0\.022500 over 5 tasks `,
		`(?m)^ok: 5 succeeded, `,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("stdout lacks %s:\n%s", want, out.String())
		}
	}

	cmd = exec.Command(bin, "bench", "tasks", "-n", "0")
	cmd.Stdout, cmd.Stderr = nil, nil
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(b), "-n must be at least 1") {
		t.Errorf("airlock bench tasks -n 0: %v, %q; want exit 2 saying why", err, b)
	}
}
