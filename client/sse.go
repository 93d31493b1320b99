package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// maxEvent bounds one server-sent event, so that a server that never ends
// a line or an event cannot make the client hold its whole answer.
const maxEvent = 16 << 20

var errEventTooLarge = errors.New("server-sent event larger than 16 MiB")

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	Type string // "message" when the event named none
	Data []byte // its data lines, joined by "\n"
}

// sseReader reads a text/event-stream as the HTML standard describes it:
// lines end in "\r\n", "\n" or "\r"; a blank line dispatches; lines
// starting with ":" are comments; fields other than event and data are
// ignored; an event without data is not dispatched.
type sseReader struct {
	sc    *bufio.Scanner
	first bool
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	sc.Split(scanSSELine)
	return &sseReader{sc: sc, first: true}
}

// next returns the next event, or io.EOF when the stream ended. An event
// cut off by the end of the stream is dropped, as the standard says.
func (r *sseReader) next() (sseEvent, error) {
	var typ string
	var data []byte
	hasData := false
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if r.first {
			line = bytes.TrimPrefix(line, []byte("\uFEFF"))
			r.first = false
		}
		if len(line) == 0 {
			if !hasData {
				typ = ""
				continue
			}
			if typ == "" {
				typ = "message"
			}
			return sseEvent{Type: typ, Data: data}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			typ = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			if len(data)+len(value) > maxEvent {
				return sseEvent{}, errEventTooLarge
			}
			data = append(data, value...)
			hasData = true
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return sseEvent{}, errEventTooLarge
		}
		return sseEvent{}, err
	}
	return sseEvent{}, io.EOF
}

// scanSSELine splits at "\r\n", "\n" or a lone "\r".
func scanSSELine(data []byte, atEOF bool) (advance int, token []byte, err error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0:
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data):
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	case atEOF:
		return i + 1, data[:i], nil
	}
	// A "\r" at the end of what has arrived: wait for the next byte to know
	// whether "\n" follows.
	return 0, nil, nil
}

// followSSE reads the event stream of GET path and hands each event to fn
// until fn says it is done or fails, the stream fails, or ctx ends. An
// "error" event is the server's *Error; a stream the server ends is
// io.ErrUnexpectedEOF. what names the stream in errors.
func (c *Client) followSSE(ctx context.Context, path string, q url.Values, hdr http.Header, what string, fn func(sseEvent) (done bool, err error)) error {
	return c.streamSSE(ctx, http.MethodGet, path, q, nil, hdr, what, fn)
}

// streamSSE is followSSE for any method, with a request body.
func (c *Client) streamSSE(ctx context.Context, method, path string, q url.Values, body io.Reader, hdr http.Header, what string, fn func(sseEvent) (done bool, err error)) error {
	if hdr == nil {
		hdr = http.Header{}
	}
	hdr.Set("Accept", "text/event-stream")
	resp, err := c.do(ctx, method, path, q, body, hdr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sr := newSSEReader(resp.Body)
	for {
		ev, err := sr.next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("read %s: %w", what, err)
		}
		if ev.Type == "error" {
			var e Error
			json.Unmarshal(ev.Data, &e)
			return &e
		}
		if done, err := fn(ev); done || err != nil {
			return err
		}
	}
}
