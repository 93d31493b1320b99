package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/sandbox"
)

type sseEvent struct {
	Name string
	Data map[string]any
}

// parseSSE reads a text/event-stream body strictly: every event is exactly
// an "event:" line, a "data:" line holding JSON, and a blank line.
func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		name, ok := strings.CutPrefix(sc.Text(), "event: ")
		if !ok {
			t.Fatalf("want an event line, got %q in %q", sc.Text(), body)
		}
		if !sc.Scan() {
			t.Fatalf("event %s has no data line", name)
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			t.Fatalf("want a data line, got %q", sc.Text())
		}
		ev := sseEvent{Name: name}
		if err := json.Unmarshal([]byte(data), &ev.Data); err != nil {
			t.Fatalf("event %s data %q: %v", name, data, err)
		}
		if !sc.Scan() || sc.Text() != "" {
			t.Fatalf("event %s is not ended by a blank line", name)
		}
		out = append(out, ev)
	}
	return out
}

func TestExecSSE(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	exec := call{method: "POST", path: "/v1/sandboxes/" + id + "/exec", cred: e.alice, body: `{"cmd":["x"]}`,
		accept: "application/json, text/event-stream"}

	a := e.must(exec, 200, nil)
	if a.header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("Content-Type %q", a.header.Get("Content-Type"))
	}
	want := []sseEvent{
		{"start", map[string]any{"pid": 7.0}},
		{"stdout", map[string]any{"data": "b3V0"}}, // "out"
		{"stderr", map[string]any{"data": "ZXJy"}}, // "err"
		{"exit", map[string]any{"exit_code": 3.0, "signal": 0.0, "duration_ms": 2.0,
			"timed_out": false, "oom_killed": false, "truncated": false}},
	}
	if d := cmp.Diff(want, parseSSE(t, a.body)); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}

	// An error after the stream began is an error event in a 200 stream.
	e.m.stream = func(s sandbox.Stream) (sandbox.ExecResult, error) {
		s.Started(9)
		s.Stdout([]byte{0xff, 0x00})
		return sandbox.ExecResult{}, fmt.Errorf("agent: %w", sandbox.ErrUnavailable)
	}
	a = e.must(exec, 200, nil)
	want = []sseEvent{
		{"start", map[string]any{"pid": 9.0}},
		{"stdout", map[string]any{"data": "/wA="}},
		{"error", map[string]any{"code": "unavailable", "message": "agent: unavailable"}},
	}
	if d := cmp.Diff(want, parseSSE(t, a.body)); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}

	// An error before anything was sent is an ordinary JSON error.
	e.m.stream = func(s sandbox.Stream) (sandbox.ExecResult, error) {
		return sandbox.ExecResult{}, fmt.Errorf("exec: %w", sandbox.ErrConflict)
	}
	a = e.must(exec, 409, nil)
	if code, _ := a.errCode(); code != "conflict" {
		t.Errorf("early error: %s", a.body)
	}
	exec.path = "/v1/sandboxes/sb_999/exec"
	a = e.must(exec, 404, nil)
	if code, _ := a.errCode(); code != "not_found" || a.header.Get("Content-Type") != "application/json" {
		t.Errorf("missing sandbox: %s", a.body)
	}
}
