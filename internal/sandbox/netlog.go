package sandbox

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/airlockhq/airlock/internal/batch"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/store"
)

// netLog writes the egress proxy's events to the store in batches, from
// one goroutine, so the proxy never waits for the database. A full queue
// drops events (counted and logged) rather than stall a sandbox's traffic.
type netLog struct {
	*batch.Batcher[egress.Event]
	st  Store
	log *slog.Logger
}

func newNetLog(st Store, log *slog.Logger) *netLog {
	l := &netLog{st: st, log: log}
	l.Batcher = batch.New("egress log", log, false, batch.Linger, l.write)
	return l
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
	if err := batch.Retry("store egress events", l.log, func() error { return l.st.AppendNetEvents(context.Background(), recs) }, nil); err != nil {
		l.log.Error("store egress events", "events", len(recs), "err", err)
	}
}
