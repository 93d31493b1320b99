package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"
)

// Exec runs a command in the sandbox to its end and returns its result,
// with output capped at 1 MiB per stream.
func (c *Client) Exec(ctx context.Context, id string, req ExecRequest) (ExecResult, error) {
	var res ExecResult
	err := c.doJSON(ctx, http.MethodPost, sandboxPath(id, "/exec"), nil, req, &res)
	return res, err
}

// ExecStream runs a command in the sandbox and copies its output to stdout
// and stderr (nil: discard) as it comes, uncapped. The result's Stdout and
// Stderr are empty. Cancelling ctx ends the request (and the command); a
// write error ends it too, and is returned. When the stream breaks after
// the command started (a restart of the server), the command goes on, and
// ExecStream follows it again by its exec id for up to a minute.
func (c *Client) ExecStream(ctx context.Context, id string, req ExecRequest, stdout, stderr io.Writer) (ExecResult, error) {
	b, err := marshal(req)
	if err != nil {
		return ExecResult{}, err
	}
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}
	resp, err := c.do(ctx, http.MethodPost, sandboxPath(id, "/exec"), nil, bytes.NewReader(b), hdr)
	if err != nil {
		return ExecResult{}, err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		// A server (or a proxy) that does not stream answers the whole result.
		var res ExecResult
		if err := decodeJSON(resp, &res); err != nil {
			return res, err
		}
		if err := writeOut(stdout, "stdout", []byte(res.Stdout)); err != nil {
			return res, err
		}
		err := writeOut(stderr, "stderr", []byte(res.Stderr))
		res.Stdout, res.Stderr = "", ""
		return res, err
	}
	st := &execStreamState{}
	res, err := readExecEvents(resp.Body, stdout, stderr, st)
	var ce *Error
	if err == nil || st.execID == "" || ctx.Err() != nil || st.writeErr || (errors.As(err, &ce) && ce.Code != "unavailable") {
		return res, err
	}
	// The stream broke after the command started (the server restarted,
	// say): the command goes on; follow it by its exec id from where the
	// stream stopped.
	return c.resumeExec(ctx, id, st, stdout, stderr, err)
}

// resumeFor is how long ExecStream tries to re-attach to a command whose
// stream broke.
const resumeFor = time.Minute

// execStreamState is what a reader of an exec stream has seen.
type execStreamState struct {
	execID   string
	received int64 // output bytes, both streams: the offset to resume at
	writeErr bool  // a writer failed: the caller's error, not the stream's
}

func (c *Client) resumeExec(ctx context.Context, id string, st *execStreamState, stdout, stderr io.Writer, cause error) (ExecResult, error) {
	deadline := time.Now().Add(resumeFor)
	wait := 100 * time.Millisecond
	for {
		next, exit, _, err := c.ExecOutput(ctx, id, st.execID, st.received, true, stdout, stderr)
		st.received = next
		if err == nil && exit != nil {
			res := *exit
			res.ExecID, res.Stdout, res.Stderr = st.execID, "", ""
			return res, nil
		}
		var ce *Error
		if errors.As(err, &ce) && ce.Status != http.StatusServiceUnavailable && ce.Status != http.StatusBadGateway && ce.Code != "unavailable" {
			return ExecResult{}, fmt.Errorf("%w; re-attaching to exec %s: %w", cause, st.execID, err)
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return ExecResult{}, fmt.Errorf("%w; re-attaching to exec %s: %v", cause, st.execID, err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// readExecEvents follows an exec's event stream to its exit or error event.
func readExecEvents(r io.Reader, stdout, stderr io.Writer, st *execStreamState) (ExecResult, error) {
	sr := newSSEReader(r)
	for {
		ev, err := sr.next()
		if err == io.EOF {
			return ExecResult{}, fmt.Errorf("exec stream ended before the exit event: %w", io.ErrUnexpectedEOF)
		}
		if err != nil {
			return ExecResult{}, fmt.Errorf("read exec stream: %w", err)
		}
		switch ev.Type {
		case "stdout", "stderr":
			var out struct {
				Data []byte `json:"data"` // base64
			}
			if err := json.Unmarshal(ev.Data, &out); err != nil {
				return ExecResult{}, fmt.Errorf("decode %s event: %w", ev.Type, err)
			}
			w := stdout
			if ev.Type == "stderr" {
				w = stderr
			}
			if err := writeOut(w, ev.Type, out.Data); err != nil {
				st.writeErr = true
				return ExecResult{}, err
			}
			st.received += int64(len(out.Data))
		case "start":
			var start struct {
				ExecID string `json:"exec_id"`
			}
			if json.Unmarshal(ev.Data, &start) == nil {
				st.execID = start.ExecID
			}
		case "exit":
			var res ExecResult
			if err := json.Unmarshal(ev.Data, &res); err != nil {
				return ExecResult{}, fmt.Errorf("decode exit event: %w", err)
			}
			return res, nil
		case "error":
			var e struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				return ExecResult{}, fmt.Errorf("decode error event: %w", err)
			}
			return ExecResult{}, &Error{Code: e.Code, Message: e.Message}
		}
		// Events this client does not know yet are skipped.
	}
}

func writeOut(w io.Writer, name string, p []byte) error {
	if w == nil || len(p) == 0 {
		return nil
	}
	if _, err := w.Write(p); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
