package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// termControl is a JSON text message on a terminal WebSocket. Clients send
// {"type":"resize","cols":C,"rows":R}; the server sends
// {"type":"exit","exit_code":N,"signal":S} when the shell ends and
// {"type":"error","code":...,"message":...} when the session or its
// sandbox is gone, then closes. Terminal bytes travel in binary messages.
type termControl struct {
	Type     string `json:"type"`
	Cols     uint16 `json:"cols,omitempty"`
	Rows     uint16 `json:"rows,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   int    `json:"signal,omitempty"`
	Code     string `json:"code,omitempty"`
	Message  string `json:"message,omitempty"`
}

// maxTermMessage bounds one message from a terminal client.
const maxTermMessage = 1 << 20

func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

// attachSession upgrades to a WebSocket joined to a session's terminal:
// the scrollback first, then live output; input and resizes from the
// client; a ping every keep-alive period; and an explicit last message
// when the shell ends or the sandbox goes.
func (s *server) attachSession(w http.ResponseWriter, r *http.Request) {
	if !isWebSocket(r) {
		s.fail(w, r, errf(http.StatusUpgradeRequired, codeInvalid, "%s needs a WebSocket upgrade (Upgrade: websocket)", r.URL.Path))
		return
	}
	var offset int64
	if v := r.URL.Query().Get("offset"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.fail(w, r, invalidf("offset %q: want a byte offset in the terminal's output, 0 or more", v))
			return
		}
		offset = n
	}
	// websocket.Accept refuses a page of another origin too, but in plain
	// text and after the session is attached: refuse it first, in JSON.
	if err := checkBrowserRequest(r); err != nil {
		s.fail(w, r, err)
		return
	}
	term, err := s.m.AttachSession(r.Context(), callerOf(r), r.PathValue("id"), r.PathValue("sid"), offset)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer term.Close()
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxTermMessage)
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()

	control := func(m termControl) error {
		b, _ := json.Marshal(m)
		wctx, done := context.WithTimeout(ctx, 10*time.Second)
		defer done()
		return conn.Write(wctx, websocket.MessageText, b)
	}
	fail := func(err error) {
		_, code, msg := statusOf(err)
		control(termControl{Type: "error", Code: code, Message: msg})
	}

	go func() { // input
		defer cancel()
		for {
			typ, data, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageBinary {
				// Input to a shell that has just ended is dropped: the
				// exit message follows on the output side.
				term.Write(data)
				continue
			}
			var m termControl
			dec := json.NewDecoder(strings.NewReader(string(data)))
			dec.DisallowUnknownFields()
			switch err := dec.Decode(&m); {
			case err != nil:
				fail(invalidf("control message: %v; want {\"type\":\"resize\",\"cols\":C,\"rows\":R}", err))
			case m.Type != "resize":
				fail(invalidf("control message type %q: only \"resize\" is understood; terminal input goes in binary messages", m.Type))
			default:
				if err := term.Resize(m.Cols, m.Rows); err != nil {
					fail(err)
				}
			}
		}
	}()
	go func() { // keep-alive; a peer that stops answering is dropped
		t := time.NewTicker(s.keepAlive)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				pctx, done := context.WithTimeout(ctx, 2*s.keepAlive)
				err := conn.Ping(pctx)
				done()
				if err != nil {
					cancel()
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		out, exit, err := term.Next(ctx)
		switch {
		case len(out) > 0:
			if conn.Write(ctx, websocket.MessageBinary, out) != nil {
				return
			}
		case exit != nil:
			code := exit.ExitCode
			control(termControl{Type: "exit", ExitCode: &code, Signal: exit.Signal})
			conn.Close(websocket.StatusNormalClosure, "the shell exited")
			return
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			return // the client went away
		default:
			fail(err)
			conn.Close(websocket.StatusGoingAway, "the session ended")
			return
		}
	}
}
