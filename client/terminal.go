package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/coder/websocket"
)

// Terminal is a connection to a session's terminal (a WebSocket). Read
// returns output in order: first the session's recent scrollback, then
// what it prints next. Several terminals may be attached to one session.
type Terminal struct {
	conn   *websocket.Conn
	offset int64
}

// TerminalEnd is the error Read returns when the terminal will send no
// more: the shell exited (Exited, with its status), or the session or its
// sandbox is gone (Code and Message say why).
type TerminalEnd struct {
	Exited   bool
	ExitCode int
	Signal   int
	Code     string
	Message  string
}

func (e *TerminalEnd) Error() string {
	if e.Exited {
		if e.Signal != 0 {
			return fmt.Sprintf("the shell was killed by signal %d", e.Signal)
		}
		return fmt.Sprintf("the shell exited with status %d", e.ExitCode)
	}
	return e.Message
}

// termMessage is a JSON control message of the terminal protocol.
type termMessage struct {
	Type     string `json:"type"`
	Cols     uint16 `json:"cols,omitempty"`
	Rows     uint16 `json:"rows,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   int    `json:"signal,omitempty"`
	Code     string `json:"code,omitempty"`
	Message  string `json:"message,omitempty"`
}

// AttachSession connects to session sid's terminal.
func (c *Client) AttachSession(ctx context.Context, id, sid string) (*Terminal, error) {
	return c.AttachSessionAt(ctx, id, sid, 0)
}

// AttachSessionAt connects to session sid's terminal from offset on: a
// client that lost its connection (the daemon restarted, say) passes its
// Offset and goes on where it was, without the scrollback it has shown.
func (c *Client) AttachSessionAt(ctx context.Context, id, sid string, offset int64) (*Terminal, error) {
	hdr := http.Header{}
	if c.key != "" {
		hdr.Set("Authorization", "Bearer "+c.key)
	}
	u := c.base + sandboxPath(id, "/sessions/"+url.PathEscape(sid)+"/attach")
	if offset > 0 {
		u += fmt.Sprintf("?offset=%d", offset)
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: hdr})
	if err != nil {
		if resp != nil && resp.StatusCode/100 != 1 && resp.StatusCode/100 != 2 {
			return nil, decodeError(resp)
		}
		return nil, err
	}
	conn.SetReadLimit(16 << 20)
	return &Terminal{conn: conn, offset: offset}, nil
}

// Offset is where in the terminal's output the bytes Read has returned
// end (a notice of skipped output counts too, so after one it may be a
// little ahead).
func (t *Terminal) Offset() int64 { return t.offset }

// Read waits for the next piece of output. At the end it returns a
// *TerminalEnd; a lost connection is any other error.
func (t *Terminal) Read(ctx context.Context) ([]byte, error) {
	for {
		typ, data, err := t.conn.Read(ctx)
		if err != nil {
			return nil, err
		}
		if typ == websocket.MessageBinary {
			t.offset += int64(len(data))
			return data, nil
		}
		var m termMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("terminal: bad control message %q: %v", data, err)
		}
		switch m.Type {
		case "exit":
			end := &TerminalEnd{Exited: true, Signal: m.Signal}
			if m.ExitCode != nil {
				end.ExitCode = *m.ExitCode
			}
			t.conn.CloseNow()
			return nil, end
		case "error":
			end := &TerminalEnd{Code: m.Code, Message: m.Message}
			// An error about a message this client sent leaves the
			// terminal open; one about the session is followed by a close.
			if m.Code == "invalid_argument" {
				return nil, &Error{Status: http.StatusBadRequest, Code: m.Code, Message: m.Message}
			}
			t.conn.CloseNow()
			return nil, end
		}
	}
}

// Write types p into the terminal.
func (t *Terminal) Write(ctx context.Context, p []byte) error {
	return t.conn.Write(ctx, websocket.MessageBinary, p)
}

// Resize sets the terminal's size.
func (t *Terminal) Resize(ctx context.Context, cols, rows uint16) error {
	b, _ := json.Marshal(termMessage{Type: "resize", Cols: cols, Rows: rows})
	return t.conn.Write(ctx, websocket.MessageText, b)
}

// Close detaches, leaving the shell running.
func (t *Terminal) Close() error {
	err := t.conn.Close(websocket.StatusNormalClosure, "detached")
	var ce websocket.CloseError
	if errors.As(err, &ce) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
