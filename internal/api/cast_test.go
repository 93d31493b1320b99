package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/cast"
)

// castLog is a sandbox's log with an interactive session and a command.
func castLog(t *testing.T, id string) []audit.Event {
	t.Helper()
	var events []audit.Event
	add := func(ms int, typ string, data any) {
		b, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		e := audit.Event{Time: t0.Add(time.Duration(ms) * time.Millisecond), Sandbox: id, Type: typ, Data: b}
		var prev *audit.Event
		if len(events) > 0 {
			prev = &events[len(events)-1]
		}
		if err := audit.Link(prev, &e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	type m = map[string]any
	add(0, audit.SandboxCreated, m{"template": "base"})
	add(100, audit.SessionCreated, m{"session_id": "ses-1", "mode": "interactive", "shell": "/bin/bash", "cols": 100, "rows": 30})
	add(200, audit.SessionOutput, m{"session_id": "ses-1", "bytes": 2, "data": "$ "})
	add(300, audit.SessionInput, m{"session_id": "ses-1", "bytes": 3, "data": "id\r"})
	// "uid=1000 é\r\n" cut inside the é: both pieces are base64.
	add(400, audit.SessionOutput, m{"session_id": "ses-1", "bytes": 10, "encoding": "base64", "data": "dWlkPTEwMDAgww=="})
	add(410, audit.SessionOutput, m{"session_id": "ses-1", "bytes": 3, "encoding": "base64", "data": "qQ0K"})
	add(500, audit.ExecStarted, m{"exec_id": "ex-1", "argv": []string{"echo", "a b"}})
	add(510, audit.ExecOutput, m{"exec_id": "ex-1", "stream": "stdout", "bytes": 4, "data": "a b\n"})
	add(520, audit.ExecExited, m{"exec_id": "ex-1", "exit_code": 0})
	add(600, audit.SessionEnded, m{"session_id": "ses-1", "exit_code": 0})
	return events
}

func TestCastRoutes(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	e.m.audit = map[string][]audit.Event{id: castLog(t, id)}
	base := "/v1/sandboxes/" + id

	for _, tc := range []struct {
		name, path string
		title      string
		output     string
		markers    []string
	}{
		{"session", base + "/sessions/ses-1/cast", "session ses-1", "$ uid=1000 é\r\n", []string{"id", "session ended, exit 0"}},
		{"exec", base + "/audit/cast?exec=ex-1", "echo 'a b'", "a b\r\n", []string{"echo 'a b'", "exit 0"}},
		{"sandbox", base + "/audit/cast", "sandbox " + id, "$ uid=1000 é\r\na b\r\n",
			[]string{"session ses-1 started", "id", "echo 'a b'", "echo 'a b': exit 0", "session ses-1 ended, exit 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := e.must(call{method: "GET", path: tc.path, cred: e.alice}, 200, nil)
			if ct := a.header.Get("Content-Type"); ct != "application/x-asciicast" {
				t.Errorf("Content-Type %q", ct)
			}
			c, err := cast.Parse(bytes.NewReader(a.body))
			if err != nil {
				t.Fatalf("answer is no cast: %v\n%s", err, a.body)
			}
			if c.Header.Title != tc.title {
				t.Errorf("title %q, want %q", c.Header.Title, tc.title)
			}
			if got := c.Text(cast.Output); got != tc.output {
				t.Errorf("output %q, want %q", got, tc.output)
			}
			var markers []string
			for _, ev := range c.Events {
				if ev.Code == cast.Marker {
					markers = append(markers, ev.Data)
				}
			}
			if d := cmp.Diff(tc.markers, markers); d != "" {
				t.Errorf("markers (-want +got):\n%s", d)
			}
		})
	}

	// Ids that are not in the log, bad queries, and other tenants.
	for _, tc := range []struct {
		path, cred string
		status     int
		code, msg  string
	}{
		{base + "/sessions/ses-2/cast", e.alice, 404, "not_found", `session "ses-2" is not in the audit log of sandbox ` + id},
		{base + "/audit/cast?exec=ex-2", e.alice, 404, "not_found", `exec "ex-2" is not in the audit log of sandbox ` + id},
		{base + "/audit/cast?exec=", e.alice, 400, "invalid_argument", "query parameter exec"},
		{base + "/audit/cast?exec=" + strings.Repeat("x", 129), e.alice, 400, "invalid_argument", "query parameter exec"},
		{base + "/audit/cast?exec=a&exec=b", e.alice, 400, "invalid_argument", `"exec" is given 2 times`},
		{base + "/audit/cast?session=ses-1", e.alice, 400, "invalid_argument", `unknown query parameter "session"`},
		{base + "/sessions/ses-1/cast?speed=2", e.alice, 400, "invalid_argument", `unknown query parameter "speed"`},
		{base + "/sessions/ses-1/cast", e.bob, 404, "not_found", ""},
		{base + "/audit/cast", e.bob, 404, "not_found", ""},
		{"/v1/sandboxes/sb_nope/audit/cast", e.alice, 404, "not_found", ""},
	} {
		a := e.must(call{method: "GET", path: tc.path, cred: tc.cred}, tc.status, nil)
		if code, msg := a.errCode(); code != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("GET %s: %s %q, want %s with %q", tc.path, code, msg, tc.code, tc.msg)
		}
	}

	// A log the service could not have written is its fault: 500, and
	// nothing of the log in the answer.
	e.m.audit[id] = append(e.m.audit[id], audit.Event{Seq: 99, Type: audit.SessionOutput, Data: json.RawMessage(`{"session_id":"ses-1","data":"!","encoding":"base64"}`)})
	a := e.must(call{method: "GET", path: base + "/sessions/ses-1/cast", cred: e.alice}, 500, nil)
	if code, _ := a.errCode(); code != "internal" {
		t.Errorf("corrupt log: code %s, want internal", code)
	}
}
