// Package e2e tests a real `airlock serve` on a loopback port, through the
// Go client and plain HTTP.
package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/client/clienttest/contract"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	linuxtest.Cleanup()
	os.Exit(code)
}

// server is one `airlock serve` process on its own data dir.
type server struct {
	t        *testing.T
	bin      string
	dataDir  string
	cmd      *exec.Cmd
	url      string
	adminKey string
	args     []string // extra flags for serve
	env      []string // extra environment for serve
	docMu    sync.Mutex
	doc      *contract.Doc // checked's, once fetched
}

// startServer starts a daemon on 127.0.0.1 with a fresh data dir (or the
// given one, for restarts) and waits until it serves.
func startServer(t *testing.T, dataDir string, args ...string) *server {
	t.Helper()
	linuxtest.Require(t)
	bin, _ := linuxtest.Build(t)
	return startServerBin(t, bin, dataDir, args...)
}

// startServerBin is startServer running the airlock binary bin.
func startServerBin(t *testing.T, bin, dataDir string, args ...string) *server {
	t.Helper()
	linuxtest.Require(t)
	if dataDir == "" {
		dataDir = tornDownDataDir(t)
	}
	s := &server{t: t, bin: bin, dataDir: dataDir, args: args}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// tornDownDataDir is a fresh data dir whose sandboxes are destroyed and
// pool unmounted when the test ends, after the daemon using it has
// stopped: sandboxes outlive a daemon by design.
func tornDownDataDir(t *testing.T) string {
	d := linuxtest.StateDir(t)
	t.Cleanup(func() {
		if rt, err := linux.New(linux.Config{StateDir: d, Binary: linuxtest.Init(t)}); err != nil {
			t.Errorf("runtime for cleanup: %v", err)
		} else if err := rt.Teardown(); err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	return d
}

// start starts the daemon: on a free port the first time, then again on
// the same address, as a restarted server would be.
func (s *server) start() {
	t := s.t
	addr := "127.0.0.1:0"
	if s.url != "" {
		addr = strings.TrimPrefix(s.url, "http://")
	}
	s.cmd = exec.Command(s.bin, append([]string{"serve", "--addr", addr, "--data-dir", s.dataDir, "--pool", "1"}, s.args...)...)
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = os.Stderr
	s.cmd.Env = append(os.Environ(), s.env...)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "serving on "); ok {
				urlc <- strings.Fields(rest)[0]
			}
		}
	}()
	select {
	case s.url = <-urlc:
	case <-time.After(60 * time.Second):
		t.Fatal("server did not start")
	}
	if s.adminKey != "" {
		return // given in the environment
	}
	key, err := os.ReadFile(filepath.Join(s.dataDir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	s.adminKey = strings.TrimSpace(string(key))
}

// stop ends the daemon with SIGTERM (graceful) and waits.
func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// admin is a client with the admin key whose every answer is checked
// against the server's own openapi.json (client/clienttest/contract): a
// status, content type or JSON body the document does not describe fails
// the test that started the server.
func (s *server) admin() *client.Client {
	return client.New(s.url, s.adminKey, client.WithHTTPClient(s.checked()))
}

// checked is an HTTP client that checks answers against the document the
// server serves, fetched once per server (and parsed once per process).
func (s *server) checked() *http.Client {
	s.t.Helper()
	s.docMu.Lock()
	defer s.docMu.Unlock()
	if s.doc == nil {
		resp, err := http.Get(s.url + "/v1/openapi.json")
		if err != nil {
			s.t.Fatal(err)
		}
		spec, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			s.t.Fatal(err)
		}
		if s.doc, err = contract.Parse(spec); err != nil {
			s.t.Fatalf("the server's openapi.json: %v", err)
		}
	}
	return &http.Client{Transport: s.doc.Transport(s.t, nil)}
}

// cli runs the airlock binary against the server with key and returns
// its combined output and exit code.
func (s *server) cli(key string, args ...string) (string, int) {
	s.t.Helper()
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(os.Environ(), "AIRLOCK_URL="+s.url, "AIRLOCK_API_KEY="+key)
	// What a verb writes to its working directory (task run's
	// ./airlock-task-ID) goes to the test's, not the package's.
	cmd.Dir = s.t.TempDir()
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(b), ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	return string(b), 0
}

var ctx = context.Background()

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

var _ = fmt.Sprint
