package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

func validateExec(req *sandbox.ExecRequest) error {
	switch {
	case len(req.Cmd) == 0 && req.Command == "":
		return invalidf("give one of the fields \"cmd\" (argv) or \"command\" (a shell string)")
	case len(req.Cmd) > 0 && req.Command != "":
		return invalidf("fields \"cmd\" and \"command\" are exclusive; give one")
	case len(req.Cmd) > 0 && req.Cmd[0] == "":
		return invalidf("field \"cmd\": the program name cmd[0] is empty")
	case len(req.Tag) > 64 || strings.ContainsFunc(req.Tag, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	}):
		return invalidf("field \"tag\": up to 64 of A-Z a-z 0-9 . _ -")
	case req.Tag != "" && !req.Background:
		return invalidf("field \"tag\" names a background process; set \"background\": true")
	case req.TimeoutS < 0 || req.TimeoutS > maxTimeoutS:
		return invalidf("field \"timeout_s\" is %d; want 0 (until the sandbox expires) to %d", req.TimeoutS, maxTimeoutS)
	}
	return nil
}

func (s *server) exec(w http.ResponseWriter, r *http.Request) {
	var req sandbox.ExecRequest
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := validateExec(&req); err != nil {
		s.fail(w, r, err)
		return
	}
	c, id := callerOf(r), r.PathValue("id")
	if req.Background {
		info, err := s.m.StartBackground(r.Context(), c, id, req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, struct {
			Pid    int    `json:"pid"`
			Tag    string `json:"tag"`
			ExecID string `json:"exec_id"`
		}{info.Pid, info.Tag, info.ExecID})
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		res, err := s.m.Exec(r.Context(), c, id, req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
		return
	}
	st := &sseStream{w: w, rc: http.NewResponseController(w)}
	stop := st.keepAlive(s.keepAlive)
	res, err := s.m.ExecStream(r.Context(), c, id, req, st)
	stop()
	if err != nil {
		if !st.begun {
			// Nothing is sent yet: answer like any other failed request.
			s.fail(w, r, err)
			return
		}
		status, code, msg := statusOf(err)
		if status >= 500 {
			s.log.Error("exec stream failed", "sandbox", id, "err", err)
		}
		st.event("error", errorDetail{Code: code, Message: msg})
		return
	}
	st.event("exit", exitJSON{
		ExecID: res.ExecID, ExitCode: res.ExitCode, Signal: res.Signal, DurationMS: res.DurationMS,
		TimedOut: res.TimedOut, OOMKilled: res.OOMKilled, Truncated: res.Truncated,
	})
}

// exitJSON is the exit event: an ExecResult without its output.
type exitJSON struct {
	ExecID     string  `json:"exec_id,omitempty"`
	ExitCode   int     `json:"exit_code"`
	Signal     int     `json:"signal"`
	DurationMS float64 `json:"duration_ms"`
	TimedOut   bool    `json:"timed_out"`
	OOMKilled  bool    `json:"oom_killed"`
	Truncated  bool    `json:"truncated"`
}

type dataJSON struct {
	Data string `json:"data"`
}

// sseStream is a sandbox.Stream that writes server-sent events. The status
// line goes out with the first event, so an exec that fails before it
// starts still gets a proper error status.
type sseStream struct {
	mu    sync.Mutex // events come from the output goroutine, comments from keepAlive
	w     http.ResponseWriter
	rc    *http.ResponseController
	begun bool
}

// keepAlive sends an SSE comment every interval once the stream has begun,
// so proxies and clients with idle timeouts keep a quiet exec's stream
// open. The returned func stops it and waits.
func (st *sseStream) keepAlive(every time.Duration) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			st.mu.Lock()
			if st.begun {
				if _, err := io.WriteString(st.w, ": keep-alive\n\n"); err == nil {
					st.rc.Flush()
				}
			}
			st.mu.Unlock()
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

func (st *sseStream) Started(pid int, execID string) error {
	return st.event("start", struct {
		Pid    int    `json:"pid"`
		ExecID string `json:"exec_id"`
	}{pid, execID})
}

func (st *sseStream) Stdout(p []byte) error {
	return st.event("stdout", dataJSON{base64.StdEncoding.EncodeToString(p)})
}

func (st *sseStream) Stderr(p []byte) error {
	return st.event("stderr", dataJSON{base64.StdEncoding.EncodeToString(p)})
}

// event writes one event and flushes it. An error means the client is
// gone; the manager stops the exec's output on it.
func (st *sseStream) event(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", name, err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.beginLocked()
	if _, err := fmt.Fprintf(st.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		return fmt.Errorf("write %s event: %w", name, err)
	}
	if err := st.rc.Flush(); err != nil {
		return fmt.Errorf("flush %s event: %w", name, err)
	}
	return nil
}

// begin sends the status line and headers now, for a stream that may stay
// quiet for long (its keep-alives need a begun stream).
func (st *sseStream) begin() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.beginLocked()
	return st.rc.Flush()
}

func (st *sseStream) beginLocked() {
	if !st.begun {
		h := st.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		// Proxies such as nginx buffer responses unless told not to.
		h.Set("X-Accel-Buffering", "no")
		st.w.WriteHeader(http.StatusOK)
		st.begun = true
	}
}
