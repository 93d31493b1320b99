package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/e2b"
)

// TestFileReadsOfKernelFilesAndDevicesAre400: through the real agent, a
// read of a /proc or /sys file, a device, a FIFO, or a symlink to any of
// them is a 400 saying what is there (it was a 200 with an empty body for
// /proc/self/status and a 503 in the log), over the API, with curl and
// through the E2B facade; a file the user made under /dev/shm reads.
func TestFileReadsOfKernelFilesAndDevicesAre400(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	res := must[client.ExecResult](t)(c.Exec(ctx, sb.ID, client.ExecRequest{Command: "mkfifo /tmp/fifo && ln -s /proc/self/status /tmp/proc-link && " +
		"ln -s /dev/zero /tmp/dev-link && echo mine > /dev/shm/mine && ls /sys/kernel/mm/transparent_hugepage/enabled"}))
	if res.ExitCode != 0 {
		t.Fatalf("setup: %+v", res)
	}
	const proc, sys = "a file of the kernel's proc filesystem", "a file of the kernel's sysfs filesystem"
	for _, tc := range []struct{ path, what string }{
		{"/proc/self/status", proc},
		{"/proc/1/cmdline", proc},
		{"/proc/uptime", proc},
		{"/sys/kernel/mm/transparent_hugepage/enabled", sys},
		{"/tmp/proc-link", proc},
		{"/dev/null", "a character device"},
		{"/dev/zero", "a character device"},
		{"/dev/urandom", "a character device"},
		{"/tmp/dev-link", "a character device"},
		{"/dev/pts/ptmx", "a character device"},
		{"/proc/keys", "a character device"}, // masked with /dev/null
		{"/tmp/fifo", "a FIFO (named pipe)"},
	} {
		code, body := call(t, s, s.adminKey, "GET", "/v1/sandboxes/"+sb.ID+"/files?path="+url.QueryEscape(tc.path), "", "")
		if code != 400 || !strings.Contains(body, `"invalid_argument"`) || !strings.Contains(body, tc.what+", not a regular file") {
			t.Errorf("GET %s: %d %.300s; want 400 saying %q", tc.path, code, body, tc.what)
		}
	}
	code, body := call(t, s, s.adminKey, "GET", "/v1/sandboxes/"+sb.ID+"/files?path=/dev/shm/mine", "", "")
	if code != 200 || body != "mine\n" {
		t.Errorf("a file the user made in /dev/shm: %d %q", code, body)
	}
	// A write where the kernel's files are says so, not "no such file".
	code, body = call(t, s, s.adminKey, "PUT", "/v1/sandboxes/"+sb.ID+"/files?path=/proc/self/x", "application/octet-stream", "x")
	if code != 400 || !strings.Contains(body, "kernel's proc filesystem") {
		t.Errorf("write under /proc: %d %.300s", code, body)
	}

	// curl sees the 400 with its message.
	out, err := exec.Command("curl", "-sS", "-H", "Authorization: Bearer "+s.adminKey, "-w", "\n%{http_code}",
		s.url+"/v1/sandboxes/"+sb.ID+"/files?path=/proc/self/status").CombinedOutput()
	if err != nil || !strings.HasSuffix(string(out), "\n400") || !strings.Contains(string(out), proc) {
		t.Errorf("curl: %v %s", err, out)
	}

	// The E2B facade's file read maps onto the same answer.
	srv, tok := e2bFacade(t, s, sb.ID)
	req, _ := http.NewRequest("GET", srv.URL+"/e2b/envd/files?path=/proc/self/status", nil)
	req.Header.Set("X-Access-Token", tok)
	req.Header.Set("E2b-Sandbox-Id", sb.ID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), proc) {
		t.Errorf("E2B files?path=/proc/self/status: %d %.300s", resp.StatusCode, b)
	}
}

// e2bFacade serves the E2B facade over s in the test process and returns
// it with an envd access token of sandbox id (a sandbox token of it).
func e2bFacade(t *testing.T, s *server, id string) (*httptest.Server, string) {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	srv := httptest.NewServer(http.StripPrefix("/e2b", e2b.NewHandler(e2b.Options{APIURL: s.url, HTTPClient: &http.Client{Transport: tr}})))
	t.Cleanup(srv.Close)
	code, body := call(t, s, s.adminKey, "POST", "/v1/sandboxes/"+id+"/tokens", "application/json", `{"ttl_s":600}`)
	var tok struct{ Token string }
	if err := json.Unmarshal([]byte(body), &tok); code != 201 || err != nil {
		t.Fatalf("token: %d %s", code, body)
	}
	return srv, tok.Token
}

// TestDownloadOfAChangingFileFails: a file that grows or shrinks while it
// is downloaded ends in an error the client sees (the connection is cut
// before the announced Content-Length), with the Go client, a plain HTTP
// client, curl and through the E2B facade, never a silently short body.
// The reader stalls after the first MiB, so the change lands while the
// agent is still reading the 32 MiB file (far more than the socket
// buffers between them hold).
func TestDownloadOfAChangingFileFails(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	const size = 32 << 20
	fill := func(t *testing.T) {
		t.Helper()
		res := must[client.ExecResult](t)(c.Exec(ctx, sb.ID, client.ExecRequest{Command: "head -c 33554432 /dev/zero > /home/user/big"}))
		if res.ExitCode != 0 {
			t.Fatalf("fill: %+v", res)
		}
	}
	srv, tok := e2bFacade(t, s, sb.ID)
	// Downloads have connections of their own: one cut off must not be
	// handed to the client's next call.
	dl := &http.Client{Transport: &http.Transport{}}
	get := func(t *testing.T, viaE2B bool) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", s.url+"/v1/sandboxes/"+sb.ID+"/files?path=big", nil)
		req.Header.Set("Authorization", "Bearer "+s.adminKey)
		if viaE2B {
			req, _ = http.NewRequest("GET", srv.URL+"/e2b/envd/files?path=/home/user/big", nil)
			req.Header.Set("X-Access-Token", tok)
			req.Header.Set("E2b-Sandbox-Id", sb.ID)
		}
		resp, err := dl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("download: %d", resp.StatusCode)
		}
		return resp
	}
	for _, tc := range []struct {
		name   string
		e2b    bool
		change string
	}{
		{"grows", false, "echo more >> /home/user/big"},
		{"shrinks", false, "truncate -s 1000 /home/user/big"},
		{"is rewritten", false, "head -c 33554432 /dev/zero > /home/user/big.new && cat /home/user/big.new > /home/user/big"},
		{"grows, through E2B", true, "echo more >> /home/user/big"},
		{"unchanged", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fill(t)
			resp := get(t, tc.e2b)
			defer resp.Body.Close()
			first := make([]byte, 1<<20)
			if _, err := io.ReadFull(resp.Body, first); err != nil {
				t.Fatal(err)
			}
			if tc.change != "" {
				if res := must[client.ExecResult](t)(c.Exec(ctx, sb.ID, client.ExecRequest{Command: tc.change})); res.ExitCode != 0 {
					t.Fatalf("change: %+v", res)
				}
			}
			n, err := io.Copy(io.Discard, resp.Body)
			n += int64(len(first))
			if tc.change == "" {
				if err != nil || n != size {
					t.Fatalf("unchanged: %d bytes, %v; want %d", n, err, size)
				}
				return
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("after %d bytes: %v; want the download cut off (unexpected EOF)", n, err)
			}
		})
	}
}

// stallingWriter sleeps at its first write, so the agent, held back by
// the full buffers, reads the file over that long.
type stallingWriter struct {
	stalled bool
	n       int64
}

func (w *stallingWriter) Write(p []byte) (int, error) {
	if !w.stalled {
		w.stalled = true
		time.Sleep(time.Second)
	}
	w.n += int64(len(p))
	return len(p), nil
}

// TestDownloadOfAFileBeingAppendedFails: a file that a process in the
// sandbox keeps appending to fails every download that overlaps the
// appends, with the Go client and with curl.
func TestDownloadOfAFileBeingAppendedFails(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	if res := must[client.ExecResult](t)(c.Exec(ctx, sb.ID, client.ExecRequest{Command: "head -c 25165824 /dev/zero > /home/user/log"})); res.ExitCode != 0 {
		t.Fatalf("fill: %+v", res)
	}
	// Blocks of the agent's frame size: before the fix, a file that grew
	// by whole frames was cut at its listed size and passed for whole.
	p := must[client.Process](t)(c.StartProcess(ctx, sb.ID, client.ExecRequest{Command: "while :; do head -c 65536 /dev/zero >> /home/user/log; sleep 0.01; done"}, "appender"))
	t.Cleanup(func() { c.SignalProcess(ctx, sb.ID, p.Pid, "KILL") })
	before := must[client.FileEntry](t)(statOf(c, sb.ID, "/home/user/log"))
	time.Sleep(100 * time.Millisecond)
	if after := must[client.FileEntry](t)(statOf(c, sb.ID, "/home/user/log")); after.Size <= before.Size {
		t.Fatalf("the appender does not append: %d then %d bytes", before.Size, after.Size)
	}

	w := &stallingWriter{}
	if _, err := c.ReadFile(ctx, sb.ID, "/home/user/log", w); err == nil {
		t.Errorf("the Go client read %d bytes of a file being appended to without an error", w.n)
	}

	// curl, slowed down so that the read spans many appends: it reports
	// the transfer cut short (exit 18, "partial file").
	out := filepath.Join(t.TempDir(), "log")
	cmd := exec.Command("curl", "-sS", "--limit-rate", "8M", "-o", out, "-H", "Authorization: Bearer "+s.adminKey,
		s.url+"/v1/sandboxes/"+sb.ID+"/files?path=/home/user/log")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 18 {
		fi, _ := os.Stat(out)
		t.Errorf("curl: %v %s (got %v); want exit 18, a partial transfer", err, stderr.String(), fi)
	}
}

// statOf finds path in its directory's listing.
func statOf(c *client.Client, id, path string) (client.FileEntry, error) {
	list, err := c.ListDir(ctx, id, filepath.Dir(path))
	if err != nil {
		return client.FileEntry{}, err
	}
	for _, e := range list {
		if e.Path == path {
			return e, nil
		}
	}
	return client.FileEntry{}, errors.New(path + " not listed")
}
