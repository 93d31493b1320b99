package e2e

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/e2b"
)

// TestE2BStream runs the facade in the test process (so -race watches its
// streams) over a real server, and reads a process stream frame by frame:
// the start, output as it comes, keep-alives while the command is quiet,
// the end, the end of the stream; and a command past its Connect deadline
// is killed.
func TestE2BStream(t *testing.T) {
	s := startServer(t, "")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	srv := httptest.NewServer(http.StripPrefix("/e2b", e2b.NewHandler(e2b.Options{APIURL: s.url, HTTPClient: &http.Client{Transport: tr}})))
	t.Cleanup(srv.Close)

	req, _ := http.NewRequest("POST", srv.URL+"/e2b/sandboxes", strings.NewReader(`{"templateID":"base"}`))
	req.Header.Set("X-API-Key", s.adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var sb struct{ SandboxID, EnvdAccessToken string }
	json.NewDecoder(resp.Body).Decode(&sb)
	resp.Body.Close()
	if resp.StatusCode != 201 || sb.EnvdAccessToken == "" {
		t.Fatalf("create: %d %+v", resp.StatusCode, sb)
	}
	t.Cleanup(func() { s.admin().DeleteSandbox(ctx, sb.SandboxID) })

	start := func(cmd string, hdr map[string]string) []string {
		t.Helper()
		msg, _ := json.Marshal(map[string]any{"process": map[string]any{"cmd": "/bin/bash", "args": []string{"-l", "-c", cmd}}})
		body := append([]byte{0}, binary.BigEndian.AppendUint32(nil, uint32(len(msg)))...)
		req, _ := http.NewRequest("POST", srv.URL+"/e2b/envd/process.Process/Start", bytes.NewReader(append(body, msg...)))
		req.Header.Set("Content-Type", "application/connect+json")
		req.Header.Set("X-Access-Token", sb.EnvdAccessToken)
		req.Header.Set("E2b-Sandbox-Id", sb.SandboxID)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var frames []string
		for {
			var h [5]byte
			if _, err := io.ReadFull(resp.Body, h[:]); err != nil {
				t.Fatalf("after %q: %v", frames, err)
			}
			m := make([]byte, binary.BigEndian.Uint32(h[1:]))
			if _, err := io.ReadFull(resp.Body, m); err != nil {
				t.Fatal(err)
			}
			frames = append(frames, describeFrame(t, h[0], m))
			if h[0]&2 != 0 {
				return frames
			}
		}
	}

	got := start("echo a; sleep 2.5; echo b >&2; exit 4", map[string]string{"Keepalive-Ping-Interval": "1"})
	// Keep-alives: one a second while it sleeps 2.5 s (the ticker may
	// also fire just before the output); collapse them.
	var squeezed []string
	for _, f := range got {
		if f == "keepalive" && len(squeezed) > 0 && squeezed[len(squeezed)-1] == "keepalive" {
			continue
		}
		squeezed = append(squeezed, f)
	}
	want := []string{"start", `stdout "a\n"`, "keepalive", `stderr "b\n"`, "end 4 exit status 4", "eos"}
	if d := cmp.Diff(want, squeezed); d != "" {
		t.Errorf("frames (-want +got):\n%s\nall: %q", d, got)
	}

	got = start("sleep 30", map[string]string{"Connect-Timeout-Ms": "1000"})
	want = []string{"start", `eos {"error":{"code":"deadline_exceeded","message":"the command timed out and was killed"}}`}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("past its deadline (-want +got):\n%s", d)
	}

	// WatchDir over the real API: the start message once the directory is
	// listed, then what the polls saw, keep-alives while nothing changes,
	// and the end of the stream at its Connect deadline.
	start("mkdir -p /tmp/w", nil)
	msg := []byte(`{"path":"/tmp/w"}`)
	body := append([]byte{0}, binary.BigEndian.AppendUint32(nil, uint32(len(msg)))...)
	req, _ = http.NewRequest("POST", srv.URL+"/e2b/envd/filesystem.Filesystem/WatchDir", bytes.NewReader(append(body, msg...)))
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("X-Access-Token", sb.EnvdAccessToken)
	req.Header.Set("E2b-Sandbox-Id", sb.SandboxID)
	req.Header.Set("Keepalive-Ping-Interval", "1")
	req.Header.Set("Connect-Timeout-Ms", "8000")
	wresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer wresp.Body.Close()
	next := func() (byte, string) {
		t.Helper()
		var h [5]byte
		if _, err := io.ReadFull(wresp.Body, h[:]); err != nil {
			t.Fatal(err)
		}
		m := make([]byte, binary.BigEndian.Uint32(h[1:]))
		if _, err := io.ReadFull(wresp.Body, m); err != nil {
			t.Fatal(err)
		}
		return h[0], string(m)
	}
	if flags, m := next(); flags != 0 || m != `{"start":{}}` {
		t.Fatalf("first WatchDir frame: %d %s", flags, m)
	}
	// Each change outlives several polls, so none is coalesced away.
	start("echo 1 > /tmp/w/x; sleep 1.5; echo 22 >> /tmp/w/x; sleep 1.5; rm /tmp/w/x", nil)
	var frames []string
	for {
		flags, m := next()
		if m == `{"keepalive":{}}` {
			continue
		}
		frames = append(frames, m)
		if flags&2 != 0 {
			break
		}
	}
	want = []string{`{"filesystem":{"name":"x","type":"EVENT_TYPE_CREATE"}}`, `{"filesystem":{"name":"x","type":"EVENT_TYPE_WRITE"}}`,
		`{"filesystem":{"name":"x","type":"EVENT_TYPE_REMOVE"}}`, `{"error":{"code":"deadline_exceeded","message":"the watch of /tmp/w reached its deadline"}}`}
	if d := cmp.Diff(want, frames); d != "" {
		t.Errorf("WatchDir frames (-want +got):\n%s", d)
	}
}

// describeFrame names a frame of a process stream.
func describeFrame(t *testing.T, flags byte, m []byte) string {
	t.Helper()
	if flags&2 != 0 {
		if string(m) != "{}" {
			return "eos " + string(m)
		}
		return "eos"
	}
	var f struct {
		Event struct {
			Start *struct{ Pid uint32 }
			Data  *struct {
				Stdout []byte
				Stderr []byte
			}
			End *struct {
				ExitCode int32
				Status   string
				Error    string
			}
			Keepalive *struct{}
		}
	}
	if err := json.Unmarshal(m, &f); err != nil {
		t.Fatalf("frame %s: %v", m, err)
	}
	switch e := f.Event; {
	case e.Start != nil && e.Start.Pid > 0:
		return "start"
	case e.Data != nil && e.Data.Stdout != nil:
		return "stdout " + strconv.Quote(string(e.Data.Stdout))
	case e.Data != nil:
		return "stderr " + strconv.Quote(string(e.Data.Stderr))
	case e.End != nil:
		s := "end " + strconv.Itoa(int(e.End.ExitCode)) + " " + e.End.Status
		if e.End.Error != "" {
			s += ": " + e.End.Error
		}
		return s
	case e.Keepalive != nil:
		return "keepalive"
	}
	return "? " + string(m)
}
