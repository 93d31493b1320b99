package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/batch"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/store"
)

// The connections the daemon carries for sandboxes (through a sandbox's
// egress proxy, into a sandbox's port) live in the daemon: a restart cuts
// them. A daemon that stops says so in each one's log entry; one killed
// or crashed cannot, so the store keeps a list of the connections in
// flight (written in batches, like the logs) and the next daemon logs
// each one left there as cut, in the network log and the audit log.

// Kinds of live connection.
const (
	connEgress = "egress"
	connPort   = "port"
)

// liveConns writes the store's list of connections in flight. A full
// queue drops (counted): a connection is never held up for its entry.
type liveConns struct {
	*batch.Batcher[connOp]
	st  Store
	log *slog.Logger

	mu    sync.Mutex
	ports map[*portConnection]struct{} // open, for Close to cut
}

// connOp opens (open set) or closes (id only) a connection's entry.
type connOp struct {
	id   string
	open *store.LiveConn
}

func newLiveConns(st Store, log *slog.Logger) *liveConns {
	l := &liveConns{st: st, log: log, ports: map[*portConnection]struct{}{}}
	l.Batcher = batch.New("live connections", log, false, batch.Linger, l.write)
	return l
}

// write stores a batch. A connection opened and closed within one batch
// was never in flight for a crash to cut: it is not written at all.
func (l *liveConns) write(ops []connOp) {
	var opened []store.LiveConn
	var closed []string
	at := map[string]int{}
	for _, op := range ops {
		if op.open != nil {
			at[op.id] = len(opened)
			opened = append(opened, *op.open)
			continue
		}
		if i, ok := at[op.id]; ok {
			opened[i].ID = "" // opened and closed here
			continue
		}
		closed = append(closed, op.id)
	}
	kept := opened[:0]
	for _, c := range opened {
		if c.ID != "" {
			kept = append(kept, c)
		}
	}
	if err := l.st.UpdateLiveConns(context.Background(), kept, closed); err != nil {
		l.log.Error("store live connections", "opened", len(kept), "closed", len(closed), "err", err)
	}
}

// open enters a connection of a sandbox; the returned func removes it.
func (l *liveConns) open(sandboxID, kind string, data any) (closed func()) {
	b, err := json.Marshal(data)
	if err != nil {
		l.log.Error("encode live connection", "sandbox", sandboxID, "err", err)
		return func() {}
	}
	var r [8]byte
	rand.Read(r[:])
	id := hex.EncodeToString(r[:])
	l.Add(connOp{id: id, open: &store.LiveConn{ID: id, SandboxID: sandboxID, Kind: kind, OpenedAt: time.Now().UTC(), Data: b}})
	var once sync.Once
	return func() { once.Do(func() { l.Add(connOp{id: id}) }) }
}

// portConn is a connection into a sandbox's port as its entry and its
// audit event (port.connection) say it.
type portConn struct {
	Tenant     string  `json:"-"`
	Port       int     `json:"port"`
	BytesIn    int64   `json:"bytes_in"`  // to the sandbox
	BytesOut   int64   `json:"bytes_out"` // from the sandbox
	DurationMS float64 `json:"duration_ms"`
	Cut        bool    `json:"cut,omitempty"`
	Reason     string  `json:"reason,omitempty"`
}

// portEntry is portConn in the store, which keeps the tenant too.
type portEntry struct {
	portConn
	TenantID string `json:"tenant_id"`
}

// logCut logs the connections a daemon that went away left in flight,
// before this one serves: an egress connection in the network log and the
// audit log (net.connection, cut), a port connection in the audit log
// (port.connection, cut).
func (s *Service) logCut(ctx context.Context) error {
	left, err := s.st.TakeLiveConns(ctx)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	for _, c := range left {
		ms := float64(now.Sub(c.OpenedAt).Microseconds()) / 1000
		switch c.Kind {
		case connEgress:
			var e egress.Event
			if err := json.Unmarshal(c.Data, &e); err != nil {
				s.log.Error("live connection", "sandbox", c.SandboxID, "err", err)
				continue
			}
			e.Time, e.Cut, e.Reason, e.DurationMS = now, true, egress.ReasonCutCrash, ms
			s.netlog.Add(e)
			s.recordNet(e)
		case connPort:
			var p portEntry
			if err := json.Unmarshal(c.Data, &p); err != nil {
				s.log.Error("live connection", "sandbox", c.SandboxID, "err", err)
				continue
			}
			p.Cut, p.Reason, p.DurationMS = true, egress.ReasonCutCrash, ms
			s.auditor(Caller{}, c.SandboxID, p.TenantID).record(audit.PortConnection, p.portConn)
		}
	}
	if len(left) > 0 {
		s.log.Info("logged connections cut by the daemon's going away", "connections", len(left))
	}
	return nil
}

// portConnection is a connection into a sandbox's port: it counts its
// bytes, keeps the sandbox from counting as idle while open, and at its
// close is logged (port.connection, cut when the daemon stops first) and
// leaves the list of connections in flight.
type portConnection struct {
	net.Conn
	s        *Service
	c        Caller
	id       string
	info     portConn
	start    time.Time
	release  func() // the idle hold
	closed   func() // the live entry
	once     sync.Once
	in, out  atomic.Int64
	stopping func() bool
}

func (s *Service) trackPort(conn net.Conn, c Caller, id, tenant string, port int) *portConnection {
	p := &portConnection{Conn: conn, s: s, c: c, id: id, info: portConn{Tenant: tenant, Port: port}, start: s.now(),
		release: s.idle.hold(id, s.now), stopping: func() bool { return s.life.Err() != nil }}
	p.closed = s.conns.open(id, connPort, portEntry{portConn: portConn{Port: port}, TenantID: tenant})
	s.conns.mu.Lock()
	s.conns.ports[p] = struct{}{}
	s.conns.mu.Unlock()
	return p
}

// cutPorts closes every open connection into a sandbox's port, each
// logged cut: the daemon stops.
func (l *liveConns) cutPorts() {
	l.mu.Lock()
	open := make([]*portConnection, 0, len(l.ports))
	for p := range l.ports {
		open = append(open, p)
	}
	l.mu.Unlock()
	for _, p := range open {
		p.Close()
	}
}

func (p *portConnection) Read(b []byte) (int, error) {
	n, err := p.Conn.Read(b)
	p.out.Add(int64(n))
	return n, err
}

func (p *portConnection) Write(b []byte) (int, error) {
	n, err := p.Conn.Write(b)
	p.in.Add(int64(n))
	return n, err
}

func (p *portConnection) Close() error {
	err := p.Conn.Close()
	p.once.Do(func() {
		p.release()
		info := p.info
		info.BytesIn, info.BytesOut = p.in.Load(), p.out.Load()
		info.DurationMS = float64(p.s.now().Sub(p.start).Microseconds()) / 1000
		if p.stopping() {
			info.Cut, info.Reason = true, egress.ReasonCut
		}
		p.s.auditor(p.c, p.id, info.Tenant).record(audit.PortConnection, info)
		p.closed()
		p.s.conns.mu.Lock()
		delete(p.s.conns.ports, p)
		p.s.conns.mu.Unlock()
	})
	return err
}
