package sandbox

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/batch"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/metrics"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// UsageFlushEvery is how often the usage of running sandboxes is written
// to the store. Ends are written at once and Close writes everything, so
// only a daemon killed outright (SIGKILL, a crash) loses what was counted
// in memory since the last write: exec counts and egress bytes. CPU time
// and peak memory of a sandbox that survives are read again from its
// cgroup.
const UsageFlushEvery = 10 * time.Second

// meter keeps the usage of running sandboxes that only the daemon sees
// (execs, egress bytes) in memory, with the last cgroup reading, and
// writes it out: periodically, when a sandbox ends, and on Close.
type meter struct {
	mu   sync.Mutex
	runs map[string]*run // by sandbox id, from admission to the end
	m    *metrics.Metrics
	// final writes ended sandboxes' usage off the request that ended
	// them; readers of stored usage flush it first.
	final *batch.Batcher[store.SandboxUsage]

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// run is one sandbox's usage so far.
type run struct {
	u store.SandboxUsage
	// booting is when an admitted create started, zero once it runs: a
	// booting sandbox has no usage row yet.
	booting time.Time
	// hist is its recent readings, for charts (metering_history.go).
	hist sampleRing
}

// countAudit chains the audit events counter in front of next.
func countAudit(m *metrics.Metrics, next func(audit.Event)) func(audit.Event) {
	if m == nil {
		return next
	}
	return func(e audit.Event) {
		m.AuditEvent()
		if next != nil {
			next(e)
		}
	}
}

// startMetering sets the meter up and starts its writer; stopMetering
// stops it after a last write.
func (s *Service) startMetering() {
	s.meter = &meter{runs: map[string]*run{}, m: s.opts.Metrics, stop: make(chan struct{}), done: make(chan struct{})}
	s.meter.final = batch.New("final usage", s.log, true, batch.Linger, func(rows []store.SandboxUsage) {
		if err := s.st.SaveUsage(context.Background(), rows); err != nil {
			s.log.Error("metering: save final usage", "sandboxes", len(rows), "err", err)
		}
	})
	s.opts.Metrics.CountStates(s.countStates)
	go s.flushLoop()
}

func (s *Service) stopMetering() {
	s.meter.once.Do(func() {
		close(s.meter.stop)
		<-s.meter.done
		s.flushUsage(context.Background())
		s.meter.final.Close()
	})
}

func (s *Service) flushLoop() {
	defer close(s.meter.done)
	t := time.NewTicker(UsageFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-s.meter.stop:
			return
		case <-t.C:
			s.flushUsage(context.Background())
		}
	}
}

// countStates counts sandbox records by state for the gauge, with a zero
// for each state none is in.
func (s *Service) countStates(ctx context.Context) (map[string]int, error) {
	n, err := s.st.CountSandboxes(ctx)
	if err != nil {
		return nil, err
	}
	for _, st := range []string{sandboxrec.Creating, sandboxrec.Running, sandboxrec.Stopped, sandboxrec.Failed} {
		n[st] += 0
	}
	return n, nil
}

// meterStart begins metering an admitted create.
func (s *Service) meterStart(rec sandboxrec.Sandbox) {
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	s.meter.runs[rec.ID] = &run{booting: time.Now(),
		u: store.SandboxUsage{SandboxID: rec.ID, TenantID: rec.TenantID, CreatedAt: rec.CreatedAt, MemoryMB: rec.MemoryMB}}
}

// meterCreated counts a create that ended with the sandbox running.
func (s *Service) meterCreated(id string) {
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	if r := s.meter.runs[id]; r != nil && !r.booting.IsZero() {
		s.meter.m.CreateDone(time.Since(r.booting), nil)
		r.booting = time.Time{}
	}
}

// meterCreateFailed counts a failed create and records its (tiny) usage:
// it was admitted, so it is one of the tenant's sandboxes.
func (s *Service) meterCreateFailed(ctx context.Context, rec sandboxrec.Sandbox, cause error) {
	s.meter.mu.Lock()
	if r := s.meter.runs[rec.ID]; r != nil && !r.booting.IsZero() {
		s.meter.m.CreateDone(time.Since(r.booting), cause)
		r.booting = time.Time{}
	}
	s.meter.mu.Unlock()
	s.meterEnd(ctx, rec)
}

// meterResume picks up a sandbox that survived a daemon restart, from
// what its last daemon stored.
func (s *Service) meterResume(ctx context.Context, rec sandboxrec.Sandbox) {
	u, err := s.st.GetUsage(ctx, rec.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("metering: load usage", "sandbox", rec.ID, "err", err)
	}
	u.SandboxID, u.TenantID, u.CreatedAt, u.MemoryMB = rec.ID, rec.TenantID, rec.CreatedAt, rec.MemoryMB
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	s.meter.runs[rec.ID] = &run{u: u}
}

// meterExec counts a command started in a sandbox.
func (s *Service) meterExec(id string) {
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	if r := s.meter.runs[id]; r != nil {
		r.u.ExecCount++
	}
}

// timeExec observes a foreground exec's duration when the returned func
// is called: defer s.timeExec()().
func (s *Service) timeExec() func() {
	start := time.Now()
	return func() { s.opts.Metrics.ExecDone(time.Since(start)) }
}

// meterEgress counts one event of the egress proxy. Bytes count on the
// sandbox's side of the proxy, once per connection or plain request: an
// intercepted (https) request's bytes are inside its tunnel's, which is
// logged too. A connection's bytes count when it closes.
func (s *Service) meterEgress(e egress.Event) {
	if e.Kind != "" {
		return // a secret event, about a request already counted
	}
	s.opts.Metrics.EgressDecision(e.Decision)
	if e.Protocol == "https" {
		return
	}
	s.opts.Metrics.EgressBytes(e.BytesUp, e.BytesDown)
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	if r := s.meter.runs[e.SandboxID]; r != nil {
		r.u.EgressBytesOut += e.BytesUp
		r.u.EgressBytesIn += e.BytesDown
	}
}

// meterStats reads a sandbox's cgroup counters into its usage: called
// just before the runtime destroys it, since its cgroup goes with it.
func (s *Service) meterStats(ctx context.Context, id string, sb runtime.Sandbox) {
	st, err := sb.Stats(ctx)
	s.meterFinal(id, runtime.FinalStats{Stats: st, Err: err})
}

// meterFinal keeps a sandbox's last reading, taken as it was destroyed.
// One that is gone already has none, and its meter keeps what it had.
func (s *Service) meterFinal(id string, final runtime.FinalStats) {
	st, err := final.Stats, final.Err
	if errors.Is(err, runtime.ErrNotFound) {
		return
	}
	if err != nil {
		s.log.Warn("metering: read stats", "sandbox", id, "err", err)
		return
	}
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	if r := s.meter.runs[id]; r != nil {
		mergeStats(&r.u, st)
	}
}

// mergeStats keeps the larger readings: cgroup counters only grow, and a
// sandbox re-attached after a restart may have a stored reading only.
func mergeStats(u *store.SandboxUsage, st runtime.Stats) {
	u.CPUSeconds = max(u.CPUSeconds, st.CPUSeconds)
	u.MemoryPeakBytes = max(u.MemoryPeakBytes, st.MemoryPeakBytes, st.MemoryBytes)
}

// meterEnd writes the final usage of a sandbox that has ended (stopped or
// failed; a record in any other state is left alone) and stops metering
// it. A sandbox the meter did not know (lost while the daemon was down)
// still gets its row: the store keeps the larger of stored and new.
func (s *Service) meterEnd(ctx context.Context, rec sandboxrec.Sandbox) {
	if rec.State != sandboxrec.Stopped && rec.State != sandboxrec.Failed {
		return
	}
	s.meter.mu.Lock()
	u := store.SandboxUsage{SandboxID: rec.ID, TenantID: rec.TenantID, CreatedAt: rec.CreatedAt, MemoryMB: rec.MemoryMB}
	if r := s.meter.runs[rec.ID]; r != nil {
		u = r.u
		delete(s.meter.runs, rec.ID)
	}
	s.meter.mu.Unlock()
	u.EndedAt, u.UpdatedAt = rec.EndedAt, s.now()
	if u.EndedAt.IsZero() {
		u.EndedAt = u.UpdatedAt
	}
	s.meter.final.Add(u)
}

// liveUsage returns a running sandbox's usage with a fresh cgroup
// reading, and whether the meter knows it.
func (s *Service) liveUsage(ctx context.Context, id string) (store.SandboxUsage, bool) {
	u, _, ok := s.liveUsageNow(ctx, id)
	return u, ok
}

// liveUsageNow is liveUsage with the memory in use now (0 if unread).
func (s *Service) liveUsageNow(ctx context.Context, id string) (store.SandboxUsage, int64, bool) {
	s.meter.mu.Lock()
	r := s.meter.runs[id]
	var u store.SandboxUsage
	if r != nil {
		u = r.u
	}
	s.meter.mu.Unlock()
	if r == nil {
		return u, 0, false
	}
	var now int64
	if sb, err := s.rt.Get(ctx, id); err == nil {
		if st, err := sb.Stats(ctx); err == nil {
			now = st.MemoryBytes
			mergeStats(&u, st)
			s.meter.mu.Lock()
			mergeStats(&r.u, st)
			r.hist.add(sample{at: s.now().UnixNano(), cpu: u.CPUSeconds, mem: st.MemoryBytes})
			s.meter.mu.Unlock()
		}
	}
	return u, now, true
}

// flushUsage writes the usage of every running sandbox, with fresh cgroup
// readings, in one transaction.
func (s *Service) flushUsage(ctx context.Context) {
	s.meter.mu.Lock()
	ids := make([]string, 0, len(s.meter.runs))
	for id, r := range s.meter.runs {
		if r.booting.IsZero() {
			ids = append(ids, id)
		}
	}
	s.meter.mu.Unlock()
	rows := make([]store.SandboxUsage, 0, len(ids))
	now := s.now()
	for _, id := range ids {
		u, ok := s.liveUsage(ctx, id)
		if !ok {
			continue // ended meanwhile, and written then
		}
		u.UpdatedAt = now
		rows = append(rows, u)
	}
	if err := s.st.SaveUsage(ctx, rows); err != nil {
		s.log.Error("metering: save usage", "sandboxes", len(rows), "err", err)
	}
}
