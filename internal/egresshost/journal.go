package egresshost

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
)

// The journal is one file of JSON lines, each written with one write(2)
// (a kill -9 of the node loses none; a crash of the machine may lose the
// last ones):
//
//	{"e":{"seq":N,"event":{...}}}   an event, in order
//	{"o":"ID","v":{...}}            a connection opened (its event as known then)
//	{"x":"ID"}                      that connection ended (its event follows)
//	{"a":N}                         the control plane has every event up to N
//
// A node that starts again logs each connection opened and never ended
// as cut by the crash, as the control plane does for its own.
type line struct {
	E *Record       `json:"e,omitempty"`
	O string        `json:"o,omitempty"`
	V *egress.Event `json:"v,omitempty"`
	X string        `json:"x,omitempty"`
	A int64         `json:"a,omitempty"`
}

// compactAt is the size past which an acknowledgement rewrites the file
// with only what it must keep.
const compactAt = 4 << 20

// maxPending bounds the events kept for a control plane that does not
// come back: past it the oldest are dropped, and counted.
const maxPending = 200_000

type journal struct {
	path string
	log  *slog.Logger
	wake func() // something new to read

	mu      sync.Mutex
	f       *os.File
	size    int64
	next    int64    // the next event's seq
	acked   int64    // the control plane has every event up to it
	pending []Record // seq > acked, in order
	opens   map[string]egress.Event
	dropped int64
	ackCh   chan struct{} // closed and replaced at each acknowledgement
}

// openJournal reads the journal at path (none: an empty one) and logs
// the connections a node that went away left open as cut.
func openJournal(path string, log *slog.Logger, now func() time.Time, wake func()) (*journal, error) {
	j := &journal{path: path, log: log, wake: wake, next: 1, opens: map[string]egress.Event{}, ackCh: make(chan struct{})}
	if err := j.read(); err != nil {
		return nil, err
	}
	at := now().UTC()
	for _, e := range j.opens {
		e.DurationMS = float64(at.Sub(e.Time).Microseconds()) / 1000
		e.Time, e.Cut, e.Reason = at, true, egress.ReasonCutCrash
		j.pending = append(j.pending, Record{Seq: j.next, Event: e})
		j.next++
	}
	if n := len(j.opens); n > 0 {
		log.Info("logged egress connections cut by the node's going away", "connections", n)
	}
	clear(j.opens)
	if err := j.rewrite(); err != nil {
		return nil, err
	}
	return j, nil
}

func (j *journal) read() error {
	b, err := os.ReadFile(j.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("egress journal: %w", err)
	}
	var acked int64
	var events []Record
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			// The last line of a write a crash cut short: nothing after it.
			break
		}
		switch {
		case l.E != nil:
			events = append(events, *l.E)
			j.next = max(j.next, l.E.Seq+1)
		case l.O != "" && l.V != nil:
			j.opens[l.O] = *l.V
		case l.X != "":
			delete(j.opens, l.X)
		case l.A > 0:
			acked = max(acked, l.A)
		}
	}
	j.acked = acked
	// A compacted journal may hold no event: numbers go on after the
	// acknowledged ones.
	j.next = max(j.next, acked+1)
	for _, r := range events {
		if r.Seq > acked {
			j.pending = append(j.pending, r)
		}
	}
	return nil
}

// rewrite replaces the file with what it must keep: the events not yet
// acknowledged and the connections open. The caller holds mu or is the
// only user.
func (j *journal) rewrite() error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if j.acked > 0 {
		enc.Encode(line{A: j.acked})
	}
	for i := range j.pending {
		enc.Encode(line{E: &j.pending[i]})
	}
	for id, e := range j.opens {
		enc.Encode(line{O: id, V: &e})
	}
	tmp := j.path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("egress journal: %w", err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fmt.Errorf("egress journal: %w", err)
	}
	if j.f != nil {
		j.f.Close()
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("egress journal: %w", err)
	}
	j.f, j.size = f, int64(buf.Len())
	return nil
}

// writeLocked appends l. A failed write is logged: the event is still
// handed on from memory, only a restart before it is read would lose it.
func (j *journal) writeLocked(l line) {
	b, err := json.Marshal(l)
	if err != nil {
		j.log.Error("egress journal: encode", "err", err)
		return
	}
	if j.f == nil {
		return // closed: the node is going away
	}
	b = append(b, '\n')
	n, err := j.f.Write(b)
	j.size += int64(n)
	if err != nil {
		j.log.Error("egress journal: write", "path", j.path, "err", err)
	}
}

// add appends an event and returns its seq.
func (j *journal) add(e egress.Event) int64 {
	j.mu.Lock()
	r := Record{Seq: j.next, Event: e}
	j.next++
	j.writeLocked(line{E: &r})
	if len(j.pending) >= maxPending {
		j.pending = j.pending[1:]
		j.dropped++
		if j.dropped == 1 || j.dropped%10000 == 0 {
			j.log.Warn("egress journal full: the control plane has not read it; dropping the oldest events", "dropped", j.dropped)
		}
	}
	j.pending = append(j.pending, r)
	j.mu.Unlock()
	j.wake()
	return r.Seq
}

// open notes a connection in flight; ended notes its end.
func (j *journal) open(e egress.Event) (ended func()) {
	id := newID()
	j.mu.Lock()
	j.opens[id] = e
	j.writeLocked(line{O: id, V: &e})
	j.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			j.mu.Lock()
			delete(j.opens, id)
			j.writeLocked(line{X: id})
			j.mu.Unlock()
		})
	}
}

// ack drops the events up to seq: the control plane has them.
func (j *journal) ack(seq int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	seq = min(seq, j.next-1)
	if seq <= j.acked {
		return
	}
	j.acked = seq
	close(j.ackCh)
	j.ackCh = make(chan struct{})
	i := 0
	for i < len(j.pending) && j.pending[i].Seq <= seq {
		i++
	}
	j.pending = append(j.pending[:0:0], j.pending[i:]...)
	if j.size > compactAt {
		if err := j.rewrite(); err != nil {
			j.log.Error("egress journal: compact", "err", err)
		}
		return
	}
	j.writeLocked(line{A: seq})
}

// waitAcked waits until every event up to seq is acknowledged, or until
// d passes; it says which.
func (j *journal) waitAcked(seq int64, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		j.mu.Lock()
		acked, ch := j.acked, j.ackCh
		j.mu.Unlock()
		if acked >= seq {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		}
	}
}

// since returns up to maxBatch events after seq. A seq past the last
// event is a reader's of an earlier journal (a node whose data dir was
// replaced): it gets every event kept.
func (j *journal) since(seq int64) []Record {
	j.mu.Lock()
	defer j.mu.Unlock()
	if seq >= j.next {
		seq = 0
	}
	var out []Record
	for _, r := range j.pending {
		if r.Seq > seq {
			out = append(out, r)
			if len(out) == maxBatch {
				break
			}
		}
	}
	return out
}

func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// journalPath is the journal's file in a node's data dir.
func journalPath(dataDir string) string { return filepath.Join(dataDir, "node", "egress.journal") }
