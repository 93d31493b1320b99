package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

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
		{"start", map[string]any{"pid": 7.0, "exec_id": "ex-fake"}},
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
		s.Started(9, "ex-9")
		s.Stdout([]byte{0xff, 0x00})
		return sandbox.ExecResult{}, fmt.Errorf("agent: %w", sandbox.ErrUnavailable)
	}
	a = e.must(exec, 200, nil)
	want = []sseEvent{
		{"start", map[string]any{"pid": 9.0, "exec_id": "ex-9"}},
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

// A quiet stream gets keep-alive comments between its events, and none
// before it has begun (an early error must still be a plain JSON answer).
func TestExecSSEKeepAlive(t *testing.T) {
	e := newEnvWith(t, Options{KeepAlive: 10 * time.Millisecond})
	id := e.sandbox(e.alice)
	e.m.stream = func(s sandbox.Stream) (sandbox.ExecResult, error) {
		time.Sleep(50 * time.Millisecond) // not begun: no comment may go out
		s.Started(7, "ex-7")
		time.Sleep(100 * time.Millisecond)
		return sandbox.ExecResult{ExitCode: 0}, nil
	}
	a := e.must(call{method: "POST", path: "/v1/sandboxes/" + id + "/exec", cred: e.alice, body: `{"cmd":["x"]}`,
		accept: "text/event-stream"}, 200, nil)
	body := string(a.body)
	if !strings.HasPrefix(body, "event: start\n") {
		t.Errorf("stream does not begin with the start event: %q", body)
	}
	n := strings.Count(body, ": keep-alive\n\n")
	if n < 2 {
		t.Errorf("%d keep-alive comments in a 100 ms quiet stream at 10 ms: %q", n, body)
	}
	// Without the comments it is the plain event sequence.
	events := parseSSE(t, []byte(strings.ReplaceAll(body, ": keep-alive\n\n", "")))
	if len(events) != 2 || events[0].Name != "start" || events[1].Name != "exit" {
		t.Errorf("events: %+v", events)
	}
}
