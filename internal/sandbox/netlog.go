package sandbox

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/store"
)

// netLog writes the egress proxy's events to the store in batches, from
// one goroutine, so the proxy never waits for the database.
type netLog struct {
	st      store.Store
	log     *slog.Logger
	ch      chan egress.Event
	flushes chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	dropped atomic.Int64
}

const netLogQueue = 8192

func newNetLog(st store.Store, log *slog.Logger) *netLog {
	l := &netLog{st: st, log: log, ch: make(chan egress.Event, netLogQueue),
		flushes: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l
}

// add queues e. A full queue drops it (counted and logged) rather than
// stall a sandbox's traffic behind the database.
func (l *netLog) add(e egress.Event) {
	select {
	case l.ch <- e:
	default:
		if l.dropped.Add(1)%1000 == 1 {
			l.log.Error("egress log queue full: events dropped", "dropped", l.dropped.Load())
		}
	}
}

// flush returns once every event queued before the call is stored.
func (l *netLog) flush() {
	reply := make(chan struct{})
	select {
	case l.flushes <- reply:
		<-reply
	case <-l.done:
	}
}

func (l *netLog) close() {
	close(l.stop)
	<-l.done
}

func (l *netLog) run() {
	defer close(l.done)
	for {
		select {
		case e := <-l.ch:
			l.write(append([]egress.Event{e}, l.drain(255)...))
		case reply := <-l.flushes:
			l.write(l.drain(-1))
			close(reply)
		case <-l.stop:
			l.write(l.drain(-1))
			return
		}
	}
}

// drain takes up to n queued events without waiting (n < 0: all).
func (l *netLog) drain(n int) []egress.Event {
	var out []egress.Event
	for n < 0 || len(out) < n {
		select {
		case e := <-l.ch:
			out = append(out, e)
		default:
			return out
		}
	}
	return out
}

func (l *netLog) write(events []egress.Event) {
	if len(events) == 0 {
		return
	}
	recs := make([]store.NetEvent, 0, len(events))
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			l.log.Error("encode egress event", "sandbox", e.SandboxID, "err", err)
			continue
		}
		recs = append(recs, store.NetEvent{SandboxID: e.SandboxID, TenantID: e.TenantID, Time: e.Time, Data: b})
	}
	if err := l.st.AppendNetEvents(context.Background(), recs); err != nil {
		l.log.Error("store egress events", "events", len(recs), "err", err)
	}
}
