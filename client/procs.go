package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Process is a background process as the server describes it.
type Process struct {
	Pid         int         `json:"pid"`
	Tag         string      `json:"tag"`
	ExecID      string      `json:"exec_id"` // in the audit log
	Command     string      `json:"command"`
	State       string      `json:"state"` // "running", "exited" or "lost"
	StartedAt   time.Time   `json:"started_at"`
	EndedAt     time.Time   `json:"ended_at,omitzero"`
	Exit        *ExecResult `json:"exit,omitempty"`
	OutputBytes int64       `json:"output_bytes"`
}

// StartProcess starts req in the background and returns its pid and tag at
// once; the process outlives this call and its output is kept.
func (c *Client) StartProcess(ctx context.Context, id string, req ExecRequest, tag string) (Process, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return Process{}, err
	}
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		return Process{}, err
	}
	body["background"] = true
	if tag != "" {
		body["tag"] = tag
	}
	var p Process
	err = c.doJSON(ctx, http.MethodPost, sandboxPath(id, "/exec"), nil, body, &p)
	return p, err
}

// ListProcesses lists a sandbox's background processes, oldest first.
func (c *Client) ListProcesses(ctx context.Context, id string) ([]Process, error) {
	var out struct {
		Processes []Process `json:"processes"`
	}
	err := c.doJSON(ctx, http.MethodGet, sandboxPath(id, "/processes"), nil, nil, &out)
	return out.Processes, err
}

// ProcessOutput copies a background process's output from offset on to
// stdout and stderr; with follow, until it ends (or ctx does). It returns
// the offset to resume from and, if the process ended, how. Output the
// server no longer kept is reported in dropped.
func (c *Client) ProcessOutput(ctx context.Context, id string, pid int, offset int64, follow bool, stdout, stderr io.Writer) (next int64, exit *ExecResult, dropped int64, err error) {
	return c.output(ctx, sandboxPath(id, fmt.Sprintf("/processes/%d/output", pid)), offset, follow, stdout, stderr)
}

// ExecInfo describes a command by its exec id.
type ExecInfo struct {
	ExecID     string      `json:"exec_id"`
	Pid        int         `json:"pid,omitempty"`
	Command    string      `json:"command"`
	Background bool        `json:"background"`
	SessionID  string      `json:"session_id,omitempty"`
	State      string      `json:"state"` // "running", "exited" or "lost"
	StartedAt  time.Time   `json:"started_at"`
	EndedAt    time.Time   `json:"ended_at,omitzero"`
	Exit       *ExecResult `json:"exit,omitempty"`
	Output     int64       `json:"output_bytes"`
	OutputKept bool        `json:"output_kept"`
}

// GetExec describes the command with exec id execID: running, or how it
// ended (a client whose exec stream a restart of the server cut finds its
// command here).
func (c *Client) GetExec(ctx context.Context, id, execID string) (ExecInfo, error) {
	var in ExecInfo
	err := c.doJSON(ctx, http.MethodGet, sandboxPath(id, "/execs/"+url.PathEscape(execID)), nil, nil, &in)
	return in, err
}

// ExecOutput is ProcessOutput for a command by exec id: one streamed to a
// client (re-attached after a restart of the server) or a background one.
func (c *Client) ExecOutput(ctx context.Context, id, execID string, offset int64, follow bool, stdout, stderr io.Writer) (next int64, exit *ExecResult, dropped int64, err error) {
	return c.output(ctx, sandboxPath(id, "/execs/"+url.PathEscape(execID)+"/output"), offset, follow, stdout, stderr)
}

func (c *Client) output(ctx context.Context, path string, offset int64, follow bool, stdout, stderr io.Writer) (next int64, exit *ExecResult, dropped int64, err error) {
	q := url.Values{"offset": {strconv.FormatInt(offset, 10)}}
	if follow {
		q.Set("follow", "1")
	}
	resp, err := c.do(ctx, http.MethodGet, path, q, nil,
		http.Header{"Accept": {"text/event-stream"}})
	if err != nil {
		return offset, nil, 0, err
	}
	defer resp.Body.Close()
	next = offset
	sr := newSSEReader(resp.Body)
	for {
		ev, err := sr.next()
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return next, nil, dropped, fmt.Errorf("read process output: %w", err)
		}
		var d struct {
			Data   []byte `json:"data"`
			Offset int64  `json:"offset"`
			Bytes  int64  `json:"bytes"`
		}
		switch ev.Type {
		case "stdout", "stderr":
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return next, nil, dropped, err
			}
			w := stdout
			if ev.Type == "stderr" {
				w = stderr
			}
			if err := writeOut(w, ev.Type, d.Data); err != nil {
				return next, nil, dropped, err
			}
			next = d.Offset + int64(len(d.Data))
		case "dropped":
			if err := json.Unmarshal(ev.Data, &d); err == nil {
				dropped += d.Bytes
			}
		case "end":
			if err := json.Unmarshal(ev.Data, &d); err == nil {
				next = d.Offset
			}
			return next, nil, dropped, nil
		case "exit":
			var res ExecResult
			if err := json.Unmarshal(ev.Data, &res); err != nil {
				return next, nil, dropped, err
			}
			if err := json.Unmarshal(ev.Data, &d); err == nil {
				next = d.Offset
			}
			return next, &res, dropped, nil
		case "error":
			var e Error
			json.Unmarshal(ev.Data, &e)
			return next, nil, dropped, &e
		}
	}
}

// WriteStdin writes r to a background process's stdin.
func (c *Client) WriteStdin(ctx context.Context, id string, pid int, r io.Reader) error {
	resp, err := c.do(ctx, http.MethodPost, sandboxPath(id, fmt.Sprintf("/processes/%d/stdin", pid)), nil, r,
		http.Header{"Content-Type": {"application/octet-stream"}})
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.Body.Close()
}

// CloseStdin closes a background process's stdin.
func (c *Client) CloseStdin(ctx context.Context, id string, pid int) error {
	return c.doJSON(ctx, http.MethodPost, sandboxPath(id, fmt.Sprintf("/processes/%d/stdin/close", pid)), nil, nil, nil)
}

// SignalProcess sends a signal ("TERM", "KILL", "15") to a background process.
func (c *Client) SignalProcess(ctx context.Context, id string, pid int, signal string) error {
	body := struct {
		Signal string `json:"signal"`
	}{signal}
	return c.doJSON(ctx, http.MethodPost, sandboxPath(id, fmt.Sprintf("/processes/%d/signal", pid)), nil, body, nil)
}
