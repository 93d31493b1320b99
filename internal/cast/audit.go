package cast

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
)

// types are the audit event types casts are made of.
var types = []string{
	audit.ExecStarted, audit.ExecOutput, audit.ExecExited,
	audit.SessionCreated, audit.SessionInput, audit.SessionOutput,
	audit.SessionResized, audit.SessionEnded, audit.OutputCapped,
}

// Types lists the audit event types casts are made of: what a caller
// reading the log for Session, Exec or Sandbox needs to ask for.
func Types() []string { return slices.Clone(types) }

// fields is the union of the data fields of the event types in Types.
type fields struct {
	ExecID     string   `json:"exec_id"`
	SessionID  string   `json:"session_id"`
	Argv       []string `json:"argv"`
	Command    string   `json:"command"`
	Stream     string   `json:"stream"`
	Data       string   `json:"data"`
	Encoding   string   `json:"encoding"`
	Mode       string   `json:"mode"`
	Shell      string   `json:"shell"`
	Cols       int      `json:"cols"`
	Rows       int      `json:"rows"`
	ExitCode   int      `json:"exit_code"`
	Signal     int      `json:"signal"`
	TimedOut   bool     `json:"timed_out"`
	OOMKilled  bool     `json:"oom_killed"`
	LimitBytes int64    `json:"limit_bytes"`
	Reason     string   `json:"reason"` // why output stopped being recorded
	Error      string   `json:"error"`  // why a command or shell broke off
}

// record is an audit event of one of Types with its data decoded.
type record struct {
	Seq  int64
	Time time.Time
	Type string
	fields
}

// decode returns the events of Types, decoded, in order.
func decode(events []audit.Event) ([]record, error) {
	var out []record
	for _, e := range events {
		if !isCastType(e.Type) {
			continue
		}
		r := record{Seq: e.Seq, Time: e.Time, Type: e.Type}
		if err := json.Unmarshal(e.Data, &r.fields); err != nil {
			return nil, fmt.Errorf("audit event %d (%s): %v", e.Seq, e.Type, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func isCastType(t string) bool { return slices.Contains(types, t) }

// bytes returns an output or input piece's recorded bytes.
func (r record) bytes() ([]byte, error) {
	switch r.Encoding {
	case "":
		return []byte(r.Data), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(r.Data)
		if err != nil {
			return nil, fmt.Errorf("audit event %d (%s): data: %v", r.Seq, r.Type, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("audit event %d (%s): unknown encoding %q", r.Seq, r.Type, r.Encoding)
}

// command is how a command reads in a label: argv shell-quoted, or the
// shell string.
func (r record) command() string {
	if len(r.Argv) > 0 {
		return shellQuote(r.Argv)
	}
	return r.Command
}

// status labels an end: "exit 0", "killed by signal 9, timed out", or
// why it broke off.
func (r record) status() string {
	s := fmt.Sprintf("exit %d", r.ExitCode)
	switch {
	case r.Error != "":
		s = label(r.Error)
	case r.Signal != 0:
		s = fmt.Sprintf("killed by signal %d", r.Signal)
	}
	if r.TimedOut {
		s += ", timed out"
	}
	if r.OOMKilled {
		s += ", out of memory"
	}
	return s
}

// cappedLabel marks where the log stopped recording output.
func (r record) cappedLabel() string {
	if r.Reason == "storage_quota" {
		return fmt.Sprintf("output not recorded from here on (the tenant's storage quota of %d bytes reached)", r.LimitBytes)
	}
	return fmt.Sprintf("output not recorded from here on (audit output cap of %d bytes reached)", r.LimitBytes)
}

// builder collects a cast's events from records. Times count from the
// first record added, and never go back even if the recorder's clock
// did.
type builder struct {
	c       Cast
	start   time.Time
	last    time.Duration
	started bool
	streams map[string]*textStream
}

func newBuilder() *builder {
	return &builder{c: Cast{Header: Header{Version: 2, Width: DefaultWidth, Height: DefaultHeight}}, streams: map[string]*textStream{}}
}

// at is the cast time of t.
func (b *builder) at(t time.Time) time.Duration {
	if !b.started {
		b.start, b.started = t, true
		b.c.Header.Timestamp = t.Unix()
	}
	d := max(t.Sub(b.start), b.last)
	b.last = d
	return d
}

func (b *builder) add(t time.Time, code, data string) {
	d := b.at(t)
	if data != "" || code == Marker {
		b.c.Events = append(b.c.Events, Event{Time: d, Code: code, Data: data})
	}
}

// streamKey names a stream of text in a builder: the code its events get,
// then which stream.
func streamKey(code string, name ...string) string {
	return code + " " + strings.Join(name, " ")
}

// text adds a piece of the stream named key (a streamKey) with the key's
// code; crlf says that the stream is a pipe's, which a terminal shows
// with "\r\n" line ends.
func (b *builder) text(r record, key string, crlf bool) (string, error) {
	p, err := r.bytes()
	if err != nil {
		return "", err
	}
	s := b.streams[key]
	if s == nil {
		s = &textStream{crlf: crlf}
		b.streams[key] = s
	}
	t := s.next(p)
	b.add(r.Time, codeOf(key), t)
	return t, nil
}

// end adds what the stream named key holds back, at t.
func (b *builder) end(t time.Time, key string) {
	if s := b.streams[key]; s != nil {
		b.add(t, codeOf(key), s.flush())
		delete(b.streams, key)
	}
}

func codeOf(key string) string { return key[:strings.IndexByte(key, ' ')] }

// finish flushes every stream still open and sets the duration.
func (b *builder) finish() *Cast {
	// Streams are flushed in a fixed order so that a cast is a function
	// of its log.
	for _, k := range slices.Sorted(maps.Keys(b.streams)) {
		if t := b.streams[k].flush(); t != "" {
			b.c.Events = append(b.c.Events, Event{Time: b.last, Code: codeOf(k), Data: t})
		}
	}
	b.c.Header.Duration = b.last.Round(time.Microsecond).Seconds()
	return &b.c
}
