package e2b

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/airlockhq/airlock/client"
)

// startPty opens an interactive Airlock session for pty.create (which asks
// for `/bin/bash -i -l` on a terminal: a session is that shell) and streams
// its terminal as pty data events.
func (h *Handler) startPty(r *http.Request, s *stream, c *client.Client, id string, req startRequest) *rpcError {
	sreq := client.SessionRequest{Mode: "interactive", Env: req.Process.Envs}
	if req.Process.Cwd != nil {
		sreq.Cwd = *req.Process.Cwd
	}
	if sz := req.Pty.Size; sz != nil {
		if sz.Cols > 1000 || sz.Rows > 1000 {
			return rpcErrorf(codeInvalidArgument, "terminal size %dx%d is over 1000x1000", sz.Cols, sz.Rows)
		}
		sreq.Cols, sreq.Rows = uint16(sz.Cols), uint16(sz.Rows)
	}
	sess, err := c.CreateSession(r.Context(), id, sreq)
	if err != nil {
		return rpcErrorOf(err)
	}
	pid := h.ptys.add(id, sess.ID)
	return h.followPty(r, s, c, id, sess.ID, pid)
}

// followPty attaches to the session's terminal and streams it until the
// shell ends (end event) or the client goes away (the shell goes on).
func (h *Handler) followPty(r *http.Request, s *stream, c *client.Client, id, sid string, pid uint32) *rpcError {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	t, err := c.AttachSession(ctx, id, sid)
	if err != nil {
		return rpcErrorOf(err)
	}
	defer t.Close()
	if err := s.Send(processResponse{Event: processEvent{Start: &startEvent{Pid: pid}}}); err != nil {
		return nil
	}
	stop := keepAlive(ctx, r, s)
	defer stop()
	for {
		b, err := t.Read(ctx)
		var end *client.TerminalEnd
		switch {
		case errors.As(err, &end):
			h.ptys.remove(id, pid)
			ev := &endEvent{ExitCode: int32(end.ExitCode), Exited: end.Exited, Status: "exit status 0"}
			switch {
			case end.Exited && end.Signal != 0:
				ev.ExitCode, ev.Exited, ev.Status = -1, false, "signal: "+signalName(end.Signal)
			case end.Exited:
				ev.Status = "exit status " + strconv.Itoa(end.ExitCode)
			default:
				// Killed (its session deleted) or its sandbox gone.
				ev.ExitCode, ev.Status = -1, "signal: killed"
			}
			s.Send(processResponse{Event: processEvent{End: ev}})
			return nil
		case err != nil:
			if r.Context().Err() != nil {
				return nil
			}
			return rpcErrorOf(err)
		}
		if err := s.Send(processResponse{Event: processEvent{Data: &dataEvent{Pty: b}}}); err != nil {
			return nil
		}
	}
}

// ptyDo runs fn on a terminal attached for this one call with the caller's
// own credential (the API decides whether it may), then detaches; the
// scrollback the attach sends is left unread.
func ptyDo(ctx context.Context, c *client.Client, id, sid string, fn func(*client.Terminal) error) *rpcError {
	t, err := c.AttachSession(ctx, id, sid)
	if err != nil {
		return rpcErrorOf(err)
	}
	defer t.Close()
	if err := fn(t); err != nil {
		return rpcErrorOf(err)
	}
	return nil
}

// update resizes a terminal (pty.resize).
func (h *Handler) update(r *http.Request, c *client.Client, id string) *rpcError {
	var req updateRequest
	if rerr := decodeUnary(r, &req); rerr != nil {
		return rerr
	}
	pid, rerr := h.selectPid(r.Context(), c, id, req.Process)
	if rerr != nil {
		return rerr
	}
	sid, ok := h.ptys.get(id, pid)
	if !ok {
		return rpcErrorf(codeNotFound, "process %d is not a terminal this server opened", pid)
	}
	if req.Pty == nil || req.Pty.Size == nil {
		return nil
	}
	sz := *req.Pty.Size
	if sz.Cols < 1 || sz.Rows < 1 || sz.Cols > 1000 || sz.Rows > 1000 {
		return rpcErrorf(codeInvalidArgument, "terminal size %dx%d is outside 1x1..1000x1000", sz.Cols, sz.Rows)
	}
	return ptyDo(r.Context(), c, id, sid, func(t *client.Terminal) error {
		return t.Resize(r.Context(), uint16(sz.Cols), uint16(sz.Rows))
	})
}
