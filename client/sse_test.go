package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func readAll(r io.Reader) ([]sseEvent, error) {
	sr := newSSEReader(r)
	var evs []sseEvent
	for {
		ev, err := sr.next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestSSEReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []sseEvent
	}{
		{"one", "event: exit\ndata: {}\n\n", []sseEvent{{"exit", []byte("{}")}}},
		{"multi-line data", "event: a\ndata: 1\ndata:2\ndata:  3\n\n", []sseEvent{{"a", []byte("1\n2\n 3")}}},
		{"crlf", "event: a\r\ndata: x\r\n\r\n", []sseEvent{{"a", []byte("x")}}},
		{"lone cr", "event: a\rdata: x\r\r", []sseEvent{{"a", []byte("x")}}},
		{"comments, id and retry ignored", ": hi\nid: 7\nretry: 10\nevent: a\ndata: x\n\n", []sseEvent{{"a", []byte("x")}}},
		{"no event name", "data: x\n\n", []sseEvent{{"message", []byte("x")}}},
		{"event without data is dropped", "event: a\n\nevent: b\ndata: y\n\n", []sseEvent{{"b", []byte("y")}}},
		{"empty data line counts", "event: a\ndata\n\n", []sseEvent{{"a", []byte("")}}},
		{"cut-off event is dropped", "event: a\ndata: x\n\nevent: b\ndata: y\n", []sseEvent{{"a", []byte("x")}}},
		{"bom", "\uFEFFevent: a\ndata: x\n\n", []sseEvent{{"a", []byte("x")}}},
		{"blank lines between", "\n\n\nevent: a\ndata: x\n\n\n", []sseEvent{{"a", []byte("x")}}},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, r := range map[string]io.Reader{
				"whole":    strings.NewReader(tc.in),
				"one byte": iotest.OneByteReader(strings.NewReader(tc.in)),
			} {
				got, err := readAll(r)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(sseEvent{}), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

func TestSSETooLarge(t *testing.T) {
	_, err := readAll(io.MultiReader(strings.NewReader("data: "), io.LimitReader(neverEnding('x'), maxEvent+1)))
	if !errors.Is(err, errEventTooLarge) {
		t.Errorf("err = %v; want errEventTooLarge", err)
	}
	many := strings.Repeat("data: "+strings.Repeat("x", 1<<20)+"\n", 17)
	if _, err := readAll(strings.NewReader(many)); !errors.Is(err, errEventTooLarge) {
		t.Errorf("17 MiB of data lines: err = %v; want errEventTooLarge", err)
	}
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// serveChunks answers an exec with body, written in the given pieces with a
// flush after each, so that events and lines arrive cut anywhere.
func serveChunks(t *testing.T, pieces ...string) *Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("Accept = %q", r.Header.Get("Accept"))
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		for _, p := range pieces {
			io.WriteString(w, p)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return New(srv.URL, "k")
}

func TestExecStreamEvents(t *testing.T) {
	// "aGVsbG8g" is "hello ", "d29ybGQ=" is "world", "b29wcw==" is "oops".
	for _, tc := range []struct {
		name       string
		pieces     []string
		out, errs  string
		code       int
		wantErr    error
		wantErrMsg string
	}{{
		name: "cut mid-line and mid-base64, crlf",
		pieces: []string{"event: start\r\ndata: {\"pid\":4}\r\n\r\nevent: std", "out\r\ndata: {\"data\":\"aGVs",
			"bG8g\"}\r\n\r", "\nevent: stderr\ndata: {\"data\":\"b29wcw==\"}\n\n: keep-alive\n\n",
			"event: stdout\ndata: {\"data\":\"d29ybGQ=\"}\n\nevent: exit\ndata: {\"exit_code\":7,\"signal\":0}\n\n"},
		out: "hello world", errs: "oops", code: 7,
	}, {
		name:   "json split over data lines",
		pieces: []string{"event: stdout\ndata: {\"data\":\ndata: \"aGVsbG8g\"}\n\nevent: exit\ndata: {\"exit_code\":\ndata: 0}\n\n"},
		out:    "hello ",
	}, {
		name:   "unknown event skipped",
		pieces: []string{"event: progress\ndata: {}\n\nevent: exit\ndata: {\"exit_code\":1}\n\n"},
		code:   1,
	}, {
		name:       "error event",
		pieces:     []string{"event: stdout\ndata: {\"data\":\"aGVsbG8g\"}\n\nevent: error\ndata: {\"code\":\"unavailable\",\"message\":\"sandbox stopped\"}\n\n"},
		out:        "hello ",
		wantErr:    ErrUnavailable,
		wantErrMsg: "sandbox stopped",
	}, {
		name:    "stream ends before exit",
		pieces:  []string{"event: stdout\ndata: {\"data\":\"aGVsbG8g\"}\n\nevent: exit\ndata: {\"exit_code\":0}\n"},
		out:     "hello ",
		wantErr: io.ErrUnexpectedEOF,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := serveChunks(t, tc.pieces...)
			var out, errs bytes.Buffer
			res, err := c.ExecStream(context.Background(), "sb-1", ExecRequest{Cmd: []string{"x"}}, &out, &errs)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || tc.wantErrMsg != "" && err.Error() != tc.wantErrMsg {
					t.Errorf("err = %v; want %v %q", err, tc.wantErr, tc.wantErrMsg)
				}
			} else if err != nil || res.ExitCode != tc.code {
				t.Errorf("ExecStream = %+v, %v; want exit %d", res, err, tc.code)
			}
			if out.String() != tc.out || errs.String() != tc.errs {
				t.Errorf("stdout %q, stderr %q; want %q, %q", out.String(), errs.String(), tc.out, tc.errs)
			}
		})
	}
}

// A server that answers JSON instead of a stream still gives the output.
func TestExecStreamJSONAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"exit_code":2,"stdout":"o","stderr":"e"}`)
	}))
	defer srv.Close()
	var out, errs bytes.Buffer
	res, err := New(srv.URL, "k").ExecStream(context.Background(), "sb", ExecRequest{Cmd: []string{"x"}}, &out, &errs)
	if err != nil || res.ExitCode != 2 || out.String() != "o" || errs.String() != "e" || res.Stdout != "" {
		t.Errorf("ExecStream = %+v, %v, %q, %q", res, err, out.String(), errs.String())
	}
}

// FuzzSSEReader: no input panics or hangs the reader, and how the input
// is cut into reads does not change the events.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"event: a\ndata: x\n\n", "data: 1\r\ndata: 2\r\n\r\n", "\r\r\n:\n", "\uFEFFdata\n\n", "event\ndata:\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		whole, err1 := readAll(strings.NewReader(s))
		bytewise, err2 := readAll(iotest.OneByteReader(strings.NewReader(s)))
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v vs %v", err1, err2)
		}
		if diff := cmp.Diff(whole, bytewise, cmp.AllowUnexported(sseEvent{}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("events differ (-whole +bytewise):\n%s", diff)
		}
	})
}
