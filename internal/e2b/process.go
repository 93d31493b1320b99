package e2b

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

// sandboxUser is the one account Airlock runs commands as (uid 1000).
const sandboxUser = "user"

// envdCaller is the credential and sandbox of an envd call: the
// X-Access-Token (a sandbox token) and the E2b-Sandbox-Id header.
func (h *Handler) envdCaller(r *http.Request) (*client.Client, string, *rpcError) {
	tok := strings.TrimSpace(r.Header.Get("X-Access-Token"))
	if tok == "" {
		return nil, "", rpcErrorf(codeUnauthenticated, "X-Access-Token is missing: use the envdAccessToken the sandbox was created or connected with")
	}
	id := strings.TrimSpace(r.Header.Get("E2b-Sandbox-Id"))
	if id == "" {
		return nil, "", rpcErrorf(codeInvalidArgument, "E2b-Sandbox-Id is missing: set E2B_SANDBOX_URL to this server's /e2b/envd")
	}
	if err := checkUser(r); err != nil {
		return nil, "", err
	}
	return h.clientOf(tok), id, nil
}

// checkUser refuses an account other than the sandbox's user: the SDK
// names it in a Basic authorization header.
func checkUser(r *http.Request) *rpcError {
	u := r.URL.Query().Get("username")
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Basic "); ok {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(a))
		if err != nil {
			return rpcErrorf(codeInvalidArgument, "bad Basic authorization header")
		}
		u, _, _ = strings.Cut(string(b), ":")
	}
	if u != "" && u != sandboxUser {
		return rpcErrorf(codePermissionDenied, "Airlock runs everything as the sandbox's user %q; user %q is not available", sandboxUser, u)
	}
	return nil
}

// process serves process.Process.
func (h *Handler) process(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	c, id, rerr := h.envdCaller(r)
	switch method {
	case "Start", "Connect":
		// Read the request first: once the answer has begun, HTTP/1's
		// server no longer lets a handler read the body.
		body, err := io.ReadAll(io.LimitReader(r.Body, maxMessage+5))
		if err != nil && rerr == nil {
			rerr = rpcErrorf(codeInvalidArgument, "read request: %v", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s := newStream(w)
		if rerr == nil {
			if method == "Start" {
				rerr = h.start(r, s, c, id)
			} else {
				rerr = h.connect(r, s, c, id)
			}
		}
		s.End(rerr)
		return
	case "StreamInput":
		// Client streaming. The e2b JS SDK never calls it (it sends input
		// with SendInput), and its transport, connect-web over fetch,
		// refuses to stream a request body at all. As for any streaming
		// method, the error comes in the end message.
		newStream(w).End(rpcErrorf(codeUnimplemented, "process.Process/StreamInput is not supported by Airlock: use SendInput"))
		return
	case "List", "SendInput", "SendSignal", "CloseStdin", "Update":
	default:
		writeUnary(w, nil, rpcErrorf(codeUnimplemented, "process.Process/%s is not supported by Airlock", method))
		return
	}
	if rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	var out any
	switch method {
	case "List":
		out, rerr = h.list(r, c, id)
	case "SendInput":
		rerr = h.sendInput(r, c, id)
	case "SendSignal":
		rerr = h.sendSignal(r, c, id)
	case "CloseStdin":
		rerr = h.closeStdin(r, c, id)
	case "Update":
		rerr = h.update(r, c, id)
	}
	if out == nil {
		out = struct{}{}
	}
	writeUnary(w, out, rerr)
}

// start runs a command as an Airlock background process and streams it:
// commands.run, foreground or not, is one (so its pid answers kill,
// sendStdin and connect from anywhere). A PTY is an interactive session.
func (h *Handler) start(r *http.Request, s *stream, c *client.Client, id string) *rpcError {
	var req startRequest
	if rerr := decodeStreamRequest(r, &req); rerr != nil {
		return rerr
	}
	if req.Process.Cmd == "" {
		return rpcErrorf(codeInvalidArgument, "process.cmd is empty")
	}
	if req.Pty != nil {
		return h.startPty(r, s, c, id, req)
	}
	ereq := client.ExecRequest{Cmd: append([]string{req.Process.Cmd}, req.Process.Args...), Env: req.Process.Envs,
		Timeout: connectTimeout(r)}
	if req.Process.Cwd != nil {
		ereq.Cwd = *req.Process.Cwd
	}
	var tag string
	if req.Tag != nil {
		tag = *req.Tag
	}
	p, err := startProcess(r.Context(), c, id, ereq, tag)
	if err != nil {
		return rpcErrorOf(err)
	}
	if req.Stdin == nil || !*req.Stdin {
		// E2B gives such a process no stdin: it reads EOF at once.
		if err := c.CloseStdin(context.WithoutCancel(r.Context()), id, p.Pid); err != nil && !errors.Is(err, client.ErrNotFound) && !errors.Is(err, client.ErrConflict) {
			return rpcErrorOf(err)
		}
	}
	return follow(r, s, c, id, p.Pid, 0)
}

// startProcess starts the process; a timeout past the sandbox's remaining
// life, which the API refuses, is cut to that life. The SDKs ask for 60 s
// by default, so without the cut every command of a sandbox in its last
// minute, and of any sandbox made with less than a minute, would fail;
// E2B runs it until the sandbox ends. Only a refused start pays for the
// look at the sandbox.
func startProcess(ctx context.Context, c *client.Client, id string, req client.ExecRequest, tag string) (client.Process, error) {
	p, err := c.StartProcess(ctx, id, req, tag)
	if err == nil || req.Timeout <= 0 || !errors.Is(err, client.ErrInvalid) {
		return p, err
	}
	sb, gerr := c.GetSandbox(ctx, id)
	asked := (req.Timeout + time.Second - 1).Truncate(time.Second) // the API's whole seconds
	if gerr != nil || time.Until(sb.ExpiresAt) >= asked {
		return p, err // refused for something else
	}
	req.Timeout = 0 // the API's default: the rest of the sandbox's life
	return c.StartProcess(ctx, id, req, tag)
}

// connect follows a running process's output from now on (E2B's connect
// sends what comes next, not what was printed before).
func (h *Handler) connect(r *http.Request, s *stream, c *client.Client, id string) *rpcError {
	var req selectRequest
	if rerr := decodeStreamRequest(r, &req); rerr != nil {
		return rerr
	}
	pid, rerr := h.selectPid(r.Context(), c, id, req.Process)
	if rerr != nil {
		return rerr
	}
	if sid, ok := h.ptys.get(id, pid); ok {
		return h.followPty(r, s, c, id, sid, pid)
	}
	ps, err := c.ListProcesses(r.Context(), id)
	if err != nil {
		return rpcErrorOf(err)
	}
	for _, p := range ps {
		if p.Pid == int(pid) && p.State == "running" {
			// From the offset after its newest output on.
			return follow(r, s, c, id, p.Pid, p.OutputBytes)
		}
	}
	return rpcErrorf(codeNotFound, "no running process has pid %d", pid)
}

// follow sends the start event, then the output from offset on as data
// events, keep-alives while it is quiet, and the end event.
func follow(r *http.Request, s *stream, c *client.Client, id string, pid int, offset int64) *rpcError {
	if err := s.Send(processResponse{Event: processEvent{Start: &startEvent{Pid: uint32(pid)}}}); err != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := keepAlive(ctx, r, s)
	defer stop()
	out := streamWriter{s: s, pick: func(p []byte) *dataEvent { return &dataEvent{Stdout: p} }}
	errw := streamWriter{s: s, pick: func(p []byte) *dataEvent { return &dataEvent{Stderr: p} }}
	_, exit, _, err := c.ProcessOutput(ctx, id, pid, offset, true, out, errw)
	if err != nil {
		if r.Context().Err() != nil {
			return nil // the client went away; the process goes on
		}
		return rpcErrorOf(err)
	}
	if exit == nil {
		return rpcErrorf(codeUnavailable, "the output of process %d ended before it exited", pid)
	}
	if exit.TimedOut {
		// E2B's envd ends a call past its Connect deadline with the
		// deadline error, not an end event: the SDKs raise their
		// TimeoutException / TimeoutError for it.
		return rpcErrorf(codeDeadlineExceeded, "the command timed out and was killed")
	}
	s.Send(processResponse{Event: processEvent{End: endOf(*exit)}})
	return nil
}

// endOf is E2B's end event for an Airlock exit: a process killed by a
// signal has exit code -1 and status "signal: killed", as Go's
// os.ProcessState says it.
func endOf(res client.ExecResult) *endEvent {
	e := &endEvent{ExitCode: int32(res.ExitCode), Exited: true, Status: fmt.Sprintf("exit status %d", res.ExitCode)}
	if res.Signal != 0 {
		e.ExitCode, e.Exited = -1, false
		e.Status = "signal: " + signalName(res.Signal)
	}
	if res.TimedOut {
		msg := "the command timed out and was killed"
		e.Error = &msg
	}
	return e
}

func signalName(n int) string {
	switch n {
	case 9:
		return "killed"
	case 15:
		return "terminated"
	case 2:
		return "interrupt"
	case 1:
		return "hangup"
	}
	return fmt.Sprintf("signal %d", n)
}

// streamWriter turns output written to it into data events.
type streamWriter struct {
	s    *stream
	pick func([]byte) *dataEvent
}

func (w streamWriter) Write(p []byte) (int, error) {
	b := append([]byte(nil), p...)
	if err := w.s.Send(processResponse{Event: processEvent{Data: w.pick(b)}}); err != nil {
		return 0, err
	}
	return len(p), nil
}

// keepAlive sends keep-alive events until stop is called.
func keepAlive(ctx context.Context, r *http.Request, s *stream) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(keepAliveEvery(r))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if s.Send(processResponse{Event: processEvent{Keepalive: &struct{}{}}}) != nil {
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// selectPid resolves a selector: a pid as it is, a tag by the running
// process that carries it.
func (h *Handler) selectPid(ctx context.Context, c *client.Client, id string, sel processSelector) (uint32, *rpcError) {
	switch {
	case sel.Pid != nil:
		return *sel.Pid, nil
	case sel.Tag != nil:
		ps, err := c.ListProcesses(ctx, id)
		if err != nil {
			return 0, rpcErrorOf(err)
		}
		for _, p := range ps {
			if p.Tag == *sel.Tag && p.State == "running" {
				return uint32(p.Pid), nil
			}
		}
		return 0, rpcErrorf(codeNotFound, "no running process has the tag %q", *sel.Tag)
	}
	return 0, rpcErrorf(codeInvalidArgument, "process selector is empty")
}

func (h *Handler) list(r *http.Request, c *client.Client, id string) (any, *rpcError) {
	if rerr := decodeUnary(r, &struct{}{}); rerr != nil {
		return nil, rerr
	}
	ps, err := c.ListProcesses(r.Context(), id)
	if err != nil {
		return nil, rpcErrorOf(err)
	}
	out := listResponse{Processes: []processInfo{}}
	for _, p := range ps {
		if p.State != "running" {
			continue
		}
		info := processInfo{Pid: uint32(p.Pid), Config: processConfig{Cmd: p.Command}}
		if p.Tag != "" {
			tag := p.Tag
			info.Tag = &tag
		}
		out.Processes = append(out.Processes, info)
	}
	return out, nil
}

func (h *Handler) sendInput(r *http.Request, c *client.Client, id string) *rpcError {
	var req sendInputRequest
	if rerr := decodeUnary(r, &req); rerr != nil {
		return rerr
	}
	pid, rerr := h.selectPid(r.Context(), c, id, req.Process)
	if rerr != nil {
		return rerr
	}
	if sid, ok := h.ptys.get(id, pid); ok {
		in := req.Input.Pty
		if in == nil {
			in = req.Input.Stdin
		}
		return ptyDo(r.Context(), c, id, sid, func(t *client.Terminal) error { return t.Write(r.Context(), in) })
	}
	if req.Input.Pty != nil {
		return rpcErrorf(codeFailedPrecondition, "process %d has no terminal", pid)
	}
	if err := c.WriteStdin(r.Context(), id, int(pid), strings.NewReader(string(req.Input.Stdin))); err != nil {
		return rpcErrorOf(err)
	}
	return nil
}

func (h *Handler) sendSignal(r *http.Request, c *client.Client, id string) *rpcError {
	var req sendSignalRequest
	if rerr := decodeUnary(r, &req); rerr != nil {
		return rerr
	}
	pid, rerr := h.selectPid(r.Context(), c, id, req.Process)
	if rerr != nil {
		return rerr
	}
	var name string
	switch req.Signal {
	case sigKill:
		name = "KILL"
	case sigTerm:
		name = "TERM"
	default:
		return rpcErrorf(codeInvalidArgument, "signal %d is not supported (SIGKILL and SIGTERM are)", req.Signal)
	}
	if sid, ok := h.ptys.get(id, pid); ok {
		// A terminal ends with its session.
		if err := c.DeleteSession(r.Context(), id, sid); err != nil {
			return rpcErrorOf(err)
		}
		h.ptys.remove(id, pid)
		return nil
	}
	if err := c.SignalProcess(r.Context(), id, int(pid), name); err != nil {
		if errors.Is(err, client.ErrConflict) {
			// Ended: for E2B, a process that is no longer running is not
			// found (kill answers false).
			return rpcErrorf(codeNotFound, "process %d is not running: %v", pid, err)
		}
		return rpcErrorOf(err)
	}
	return nil
}

func (h *Handler) closeStdin(r *http.Request, c *client.Client, id string) *rpcError {
	var req selectRequest
	if rerr := decodeUnary(r, &req); rerr != nil {
		return rerr
	}
	pid, rerr := h.selectPid(r.Context(), c, id, req.Process)
	if rerr != nil {
		return rerr
	}
	if _, ok := h.ptys.get(id, pid); ok {
		return rpcErrorf(codeFailedPrecondition, "process %d is a terminal: send ^D (\\x04) instead", pid)
	}
	if err := c.CloseStdin(r.Context(), id, int(pid)); err != nil {
		return rpcErrorOf(err)
	}
	return nil
}
