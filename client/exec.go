package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
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
// Stderr are empty. Cancelling ctx ends the request; a write error ends
// it too, and is returned.
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
	return readExecEvents(resp.Body, stdout, stderr)
}

// readExecEvents follows an exec's event stream to its exit or error event.
func readExecEvents(r io.Reader, stdout, stderr io.Writer) (ExecResult, error) {
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
				return ExecResult{}, err
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
		// "start", and events this client does not know yet, are skipped.
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
