package cluster

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
)

// holderEnv makes this test binary a process that leads (on the database
// it names) until it is killed.
const holderEnv = "AIRLOCK_TEST_PG_HOLDER"

func TestMain(m *testing.M) {
	if url := os.Getenv(holderEnv); url != "" {
		e, err := NewPGElector(url, 7, "holder", ElectorOptions{RetryPeriod: 100 * time.Millisecond})
		if err != nil {
			os.Exit(2)
		}
		go func() {
			for leading := range e.Changes() {
				if leading {
					os.Stdout.WriteString("leading\n")
				}
			}
		}()
		e.Run(context.Background())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestPGElectorKilledLeader: a leader process killed with SIGKILL loses
// the lock as its socket closes, so a follower leads within its retry
// period, not after a keepalive timeout.
func TestPGElectorKilledLeader(t *testing.T) {
	url := testenv.NewDatabase(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+url)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "leading" {
		t.Fatalf("the holder process: %q, %v", line, err)
	}
	e, err := NewPGElector(url, 7, "follower", ElectorOptions{RetryPeriod: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, "follower", e)
	waitFor(t, 5*time.Second, "the follower names the holder", func() bool { return r.Leader() == "holder" })
	if r.IsLeader() {
		t.Fatal("the follower leads while the holder does")
	}
	killed := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the follower leads after the holder was killed", r.IsLeader)
	t.Logf("the follower led %s after the holder was killed (retry period 100ms)", time.Since(killed).Round(time.Millisecond))
}
