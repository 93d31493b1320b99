package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Session is a shell kept between calls.
type Session struct {
	ID        string    `json:"id"`
	Shell     string    `json:"shell"`
	Mode      string    `json:"mode"`  // "exec" or "interactive"
	State     string    `json:"state"` // "ready", "busy" or "ended"
	Cols      uint16    `json:"cols"`
	Rows      uint16    `json:"rows"`
	Attached  int       `json:"attached"`
	CreatedAt time.Time `json:"created_at"`
}

// SessionRequest opens a session; zero fields take the server's defaults.
type SessionRequest struct {
	// Mode is "exec" (the default: a quiet shell for SessionExec) or
	// "interactive" (prompt, echo and line editing, for a person attached
	// to its terminal).
	Mode string            `json:"mode,omitempty"`
	Cwd  string            `json:"cwd,omitempty"`
	Env  map[string]string `json:"env,omitempty"`
	Cols uint16            `json:"cols,omitempty"`
	Rows uint16            `json:"rows,omitempty"`
}

// SessionResult is how one command in a session ended.
type SessionResult struct {
	ExitCode   int     `json:"exit_code"`
	Output     string  `json:"output"`
	DurationMS float64 `json:"duration_ms"`
	TimedOut   bool    `json:"timed_out"`
	Truncated  bool    `json:"truncated"`
}

// CreateSession starts a bash session in the sandbox.
func (c *Client) CreateSession(ctx context.Context, id string, req SessionRequest) (Session, error) {
	var s Session
	err := c.doJSON(ctx, http.MethodPost, sandboxPath(id, "/sessions"), nil, req, &s)
	return s, err
}

// SessionExec runs command in the session's shell; timeout 0 means the
// server's default (60 s), after which the command gets SIGINT.
func (c *Client) SessionExec(ctx context.Context, id, sid, command string, timeout time.Duration) (SessionResult, error) {
	var r SessionResult
	body := struct {
		Command  string `json:"command"`
		TimeoutS int64  `json:"timeout_s,omitempty"`
	}{command, seconds(timeout)}
	err := c.doJSON(ctx, http.MethodPost, sandboxPath(id, "/sessions/"+url.PathEscape(sid)+"/exec"), nil, body, &r)
	return r, err
}

// ListSessions lists a sandbox's sessions.
func (c *Client) ListSessions(ctx context.Context, id string) ([]Session, error) {
	var out struct {
		Sessions []Session `json:"sessions"`
	}
	err := c.doJSON(ctx, http.MethodGet, sandboxPath(id, "/sessions"), nil, nil, &out)
	return out.Sessions, err
}

// DeleteSession ends a session's shell.
func (c *Client) DeleteSession(ctx context.Context, id, sid string) error {
	return c.doJSON(ctx, http.MethodDelete, sandboxPath(id, "/sessions/"+url.PathEscape(sid)), nil, nil, nil)
}
