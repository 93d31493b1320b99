package clienttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/client"
)

const outputCap = 1 << 20

func (s *Server) execute(w http.ResponseWriter, r *http.Request, b *sandbox) {
	var req struct {
		Cmd      []string          `json:"cmd"`
		Command  string            `json:"command"`
		Cwd      string            `json:"cwd"`
		Env      map[string]string `json:"env"`
		Stdin    string            `json:"stdin"`
		TimeoutS int64             `json:"timeout_s"`
	}
	if !decode(w, r, &req) {
		return
	}
	argv := req.Cmd
	if req.Command != "" {
		argv = []string{"sh", "-c", req.Command}
	}
	if len(argv) == 0 || len(req.Cmd) > 0 && req.Command != "" {
		fail(w, 400, "invalid_argument", "want exactly one of cmd and command")
		return
	}
	s.mu.Lock()
	run := s.exec
	s.mu.Unlock()
	start := time.Now()
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		var out, errb capped
		code, sig := run(argv, &out, &errb)
		writeJSON(w, 200, client.ExecResult{ExitCode: code, Signal: sig,
			Stdout:     strings.ToValidUTF8(out.String(), "\uFFFD"),
			Stderr:     strings.ToValidUTF8(errb.String(), "\uFFFD"),
			DurationMS: float64(time.Since(start).Milliseconds()), Truncated: out.cut || errb.cut})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	ev := &events{w: w}
	ev.send("start", map[string]int{"pid": 1})
	code, sig := run(argv, ev.writer("stdout"), ev.writer("stderr"))
	ev.send("exit", map[string]any{"exit_code": code, "signal": sig,
		"duration_ms": time.Since(start).Milliseconds(), "timed_out": false, "oom_killed": false, "truncated": false})
}

// events writes server-sent events; Exec may write both streams from
// different goroutines.
type events struct {
	mu sync.Mutex
	w  http.ResponseWriter
}

func (e *events) send(name string, v any) {
	b, _ := json.Marshal(v)
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b)
	http.NewResponseController(e.w).Flush()
}

type eventWriter struct {
	e    *events
	name string
}

func (e *events) writer(name string) io.Writer { return eventWriter{e, name} }

func (w eventWriter) Write(p []byte) (int, error) {
	w.e.send(w.name, map[string][]byte{"data": p})
	return len(p), nil
}

// capped keeps the first outputCap bytes written to it.
type capped struct {
	bytes.Buffer
	cut bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := outputCap - c.Len()
	if len(p) > room {
		c.cut = true
		c.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.Buffer.Write(p)
}
