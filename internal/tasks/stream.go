package tasks

import (
	"bytes"
	"strings"

	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// maxLine bounds one line of harness output held before it is parsed; a
// longer one is passed on raw, cut.
const maxLine = 4 << 20

// eventStream turns a harness's output into events: stdout lines go
// through the harness's parser, stderr lines become raw events, and
// usage events add to the task's token counts. Calls come from one
// goroutine.
type eventStream struct {
	s        *Service
	rec      *taskrec.Task
	sb       string
	p        Parser
	out, err []byte
}

func newEventStream(s *Service, rec *taskrec.Task, sb string, p Parser) *eventStream {
	return &eventStream{s: s, rec: rec, sb: sb, p: p}
}

func (st *eventStream) Stdout(p []byte) error {
	st.out = st.lines(st.out, p, func(line string, cut bool) []Event {
		if cut {
			return []Event{{Type: EventRaw, Stream: "stdout", Line: line, Truncated: true}}
		}
		return st.p.Line(line)
	})
	return nil
}

func (st *eventStream) Stderr(p []byte) error {
	st.err = st.lines(st.err, p, func(line string, cut bool) []Event {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		return []Event{{Type: EventRaw, Stream: "stderr", Line: line, Truncated: cut}}
	})
	return nil
}

// lines appends p to buf, emits the events of each whole line and
// returns what is left.
func (st *eventStream) lines(buf, p []byte, parse func(string, bool) []Event) []byte {
	buf = append(buf, p...)
	var evs []Event
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		evs = append(evs, parse(strings.TrimSuffix(string(buf[:i]), "\r"), false)...)
		buf = buf[i+1:]
	}
	if len(buf) > maxLine {
		evs = append(evs, parse(string(buf), true)...)
		buf = nil
	}
	st.send(evs)
	// Copy the rest down, so the buffer does not pin every chunk.
	return append([]byte(nil), buf...)
}

// flush parses what is left without a final newline.
func (st *eventStream) flush() {
	var evs []Event
	if len(st.out) > 0 {
		evs = append(evs, st.p.Line(strings.TrimSuffix(string(st.out), "\r"))...)
	}
	if s := strings.TrimSpace(string(st.err)); s != "" {
		evs = append(evs, Event{Type: EventRaw, Stream: "stderr", Line: string(st.err)})
	}
	st.out, st.err = nil, nil
	st.send(evs)
}

func (st *eventStream) send(evs []Event) {
	for _, e := range evs {
		if e.Type == EventUsage {
			st.rec.InputTokens += e.InputTokens
			st.rec.OutputTokens += e.OutputTokens
		}
	}
	for i := range evs {
		if evs[i].Type == EventUsage {
			evs[i].Source, evs[i].Call = SourceHarness, nil
		}
	}
	st.s.emit(st.rec.ID, st.sb, evs...)
}
