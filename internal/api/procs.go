package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// pidOf reads the {pid} path value.
func pidOf(r *http.Request) (int, error) {
	pid, err := strconv.Atoi(r.PathValue("pid"))
	if err != nil || pid < 1 {
		return 0, errf(http.StatusNotFound, codeNotFound, "process %q not found", r.PathValue("pid"))
	}
	return pid, nil
}

func (s *server) listProcesses(w http.ResponseWriter, r *http.Request) {
	list, err := s.m.ListProcesses(r.Context(), callerOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Processes []sandbox.ProcInfo `json:"processes"`
	}{list})
}

// procSSE writes a background process's output as server-sent events.
type procSSE struct{ st *sseStream }

func (p procSSE) Output(stream string, off int64, data []byte) error {
	return p.st.event(stream, struct {
		Data   string `json:"data"`
		Offset int64  `json:"offset"`
	}{base64.StdEncoding.EncodeToString(data), off})
}

func (p procSSE) Dropped(off, n int64) error {
	return p.st.event("dropped", struct {
		Offset int64 `json:"offset"`
		Bytes  int64 `json:"bytes"`
	}{off, n})
}

func (p procSSE) Exit(res sandbox.ExecResult, next int64) error {
	return p.st.event("exit", struct {
		exitJSON
		Offset int64 `json:"offset"`
	}{exitJSON{ExitCode: res.ExitCode, Signal: res.Signal, DurationMS: res.DurationMS,
		TimedOut: res.TimedOut, OOMKilled: res.OOMKilled}, next})
}

func (p procSSE) End(next int64) error {
	return p.st.event("end", struct {
		Offset int64 `json:"offset"`
	}{next})
}

func (s *server) processOutput(w http.ResponseWriter, r *http.Request) {
	pid, err := pidOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, id := callerOf(r), r.PathValue("id")
	s.streamOutput(w, r, func() error {
		_, err := s.m.ListProcesses(r.Context(), c, id)
		return err
	}, func(offset int64, follow bool, out sandbox.ProcStream) error {
		return s.m.ProcessOutput(r.Context(), c, id, pid, offset, follow, out)
	})
}

// getExec answers GET /v1/sandboxes/{id}/execs/{exec_id}.
func (s *server) getExec(w http.ResponseWriter, r *http.Request) {
	in, err := s.m.GetExec(r.Context(), callerOf(r), r.PathValue("id"), r.PathValue("exec_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, in)
}

// execOutput answers GET /v1/sandboxes/{id}/execs/{exec_id}/output.
func (s *server) execOutput(w http.ResponseWriter, r *http.Request) {
	c, id, execID := callerOf(r), r.PathValue("id"), r.PathValue("exec_id")
	s.streamOutput(w, r, func() error {
		in, err := s.m.GetExec(r.Context(), c, id, execID)
		if err == nil && !in.Kept {
			err = fmt.Errorf("%w: command %s's output is no longer kept (its events are in the audit log)", sandbox.ErrNotFound, execID)
		}
		return err
	}, func(offset int64, follow bool, out sandbox.ProcStream) error {
		return s.m.ExecOutput(r.Context(), c, id, execID, offset, follow, out)
	})
}

// streamOutput parses ?offset=&follow=, runs check (a bad id is a plain
// JSON error, before the stream begins), then streams run's output as SSE.
func (s *server) streamOutput(w http.ResponseWriter, r *http.Request, check func() error, run func(offset int64, follow bool, out sandbox.ProcStream) error) {
	if err := checkQuery(r, []string{"offset", "follow"}); err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	var offset int64
	if v := q.Get("offset"); v != "" {
		var err error
		if offset, err = strconv.ParseInt(v, 10, 64); err != nil || offset < 0 {
			s.fail(w, r, invalidf("query parameter offset=%q: want a byte offset (0 or more)", v))
			return
		}
	}
	follow := false
	switch q.Get("follow") {
	case "", "0", "false":
	case "1", "true":
		follow = true
	default:
		s.fail(w, r, invalidf("query parameter follow=%q: want 1 or 0", q.Get("follow")))
		return
	}
	if err := check(); err != nil {
		s.fail(w, r, err)
		return
	}
	st := &sseStream{w: w, rc: http.NewResponseController(w)}
	stop := st.keepAlive(s.keepAlive)
	defer stop()
	err := run(offset, follow, procSSE{st})
	if err == nil || r.Context().Err() != nil {
		return
	}
	if !st.begun {
		s.fail(w, r, err)
		return
	}
	_, code, msg := statusOf(err)
	st.event("error", errorDetail{Code: code, Message: msg})
}

func (s *server) writeStdin(w http.ResponseWriter, r *http.Request) {
	pid, err := pidOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := s.m.WriteStdin(r.Context(), callerOf(r), r.PathValue("id"), pid, http.MaxBytesReader(w, r.Body, 64<<20))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Bytes int64 `json:"bytes"`
	}{n})
}

func (s *server) closeStdin(w http.ResponseWriter, r *http.Request) {
	pid, err := pidOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.m.CloseStdin(r.Context(), callerOf(r), r.PathValue("id"), pid); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) signalProcess(w http.ResponseWriter, r *http.Request) {
	pid, err := pidOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req struct {
		Signal string `json:"signal"`
	}
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	sig, ok := parseSignal(req.Signal)
	if !ok {
		s.fail(w, r, invalidf("field \"signal\" is %q: want a name such as TERM, KILL, INT, HUP, USR1 or a number 1-64", req.Signal))
		return
	}
	if err := s.m.SignalProcess(r.Context(), callerOf(r), r.PathValue("id"), pid, sig); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// parseSignal takes "TERM", "SIGTERM" or "15".
func parseSignal(v string) (int, bool) {
	if n, err := strconv.Atoi(v); err == nil {
		return n, n >= 1 && n <= 64
	}
	name := strings.ToUpper(v)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	sig := unix.SignalNum(name)
	return int(sig), sig != 0
}
