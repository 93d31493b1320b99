package sandbox

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/batch"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// DefaultAuditOutputCap bounds the command and terminal output recorded
// per sandbox; past it one audit.output_capped event says so and output
// is no longer recorded (everything else still is).
const DefaultAuditOutputCap = 64 << 20

// DefaultAuditRetention is how long a log is kept after its newest event.
const DefaultAuditRetention = 30 * 24 * time.Hour

// auditPruneEvery is how often the reaper deletes logs past retention.
const auditPruneEvery = time.Hour

// auditLog links each sandbox's events into its hash chain as they
// happen, in order, and writes them to the store in batches from one
// goroutine: recording adds no database round trip to the call it
// records. A full queue makes recording wait rather than drop an event,
// which would break the chain.
type auditLog struct {
	*batch.Batcher[audit.Event]
	st     Store
	log    *slog.Logger
	now    func() time.Time
	outCap int64
	notify func(audit.Event) // nil: nobody listens
	// quota is a tenant's storage quota in bytes, 0 for none (storage.go).
	quota   func(tenant string) int64
	pending pendingBytes  // queued, not yet counted by the store
	journal *auditJournal // nil without a data dir (audit_journal.go)

	mu    sync.Mutex
	heads map[string]*auditHead

	pruned time.Time // the reaper's last prune; only it reads and writes
}

// auditHead is what the log knows of a sandbox's chain in memory.
type auditHead struct {
	tenant  string
	seq     int64
	hash    string
	out     int64 // output bytes recorded
	capped  bool
	stopped time.Time // when the sandbox ended; zero while it runs
}

// Durable returns once every audit event recorded so far, and every
// connection opened into a sandbox's port, would survive a kill -9 of the
// daemon. The API calls it before it answers, so an event a client was
// told of (an exec's start, output and exit, a file written, a stream
// opened) is never lost. With a data dir the audit log's journal holds
// them already (audit_journal.go); without one, the batch under way is
// cut short and written: one transaction, shared by the calls that wait
// together.
func (s *Service) Durable() {
	if !s.audit.journal.durable() {
		s.audit.Sync()
	}
	s.conns.Sync()
}

func newAuditLog(st Store, log *slog.Logger, now func() time.Time, outCap int64, quota func(string) int64, notify func(audit.Event)) *auditLog {
	a := &auditLog{st: st, log: log, now: now, outCap: outCap, quota: quota, notify: notify, heads: map[string]*auditHead{}}
	a.Batcher = batch.New("audit log", log, true, batch.Linger, a.write)
	return a
}

func (a *auditLog) write(events []audit.Event) {
	// A batch lost is audit lost, and a gap that verification reports.
	// An API call waiting for its events to be durable answers only once
	// they are stored.
	err := batch.Retry("store audit events", a.log, func() error { return a.st.AppendAudit(context.Background(), events) },
		func(err error) bool { return errors.Is(err, store.ErrConflict) })
	if err != nil {
		a.log.Error("store audit events", "events", len(events), "err", err)
	}
	a.pending.written(events)
	if a.journal != nil {
		a.journal.stored(len(events))
	}
}

// head returns the sandbox's chain head, read from the store the first
// time (after a restart, or for a sandbox this process has forgotten).
// a.mu is held.
func (a *auditLog) head(id string) *auditHead {
	h := a.heads[id]
	if h == nil {
		h = &auditHead{}
		a.Batcher.Flush() // nothing of this sandbox may be queued unseen
		seq, hash, err := a.st.AuditHead(context.Background(), id)
		if err != nil {
			a.log.Error("audit head", "sandbox", id, "err", err)
		}
		h.seq, h.hash = seq, hash
		// A log capped before a restart stays capped, with its one marker.
		if h.capped, err = a.st.AuditOutputCapped(context.Background(), id); err != nil {
			a.log.Error("audit head", "sandbox", id, "err", err)
		}
		a.heads[id] = h
	}
	return h
}

// fresh registers the empty chain of a sandbox whose record was just
// inserted: the store refused no id, sandbox records are never deleted and
// only this log writes a sandbox's events, so there is nothing of it to
// flush or load, and create skips both (a flush would wait for the batch
// being written, of every sandbox).
func (a *auditLog) fresh(id, tenant string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.heads[id] == nil {
		a.heads[id] = &auditHead{tenant: tenant}
	}
}

// auditor records the events of one sandbox on behalf of one actor.
type auditor struct {
	a       *auditLog
	sandbox string
	tenant  string
	actor   string
}

// auditor returns the recorder of sandbox id (of tenant), acting as c: an
// API key's id, "token:" and the sandbox for a sandbox token, "system"
// for the daemon's own doings (the zero Caller).
func (s *Service) auditor(c Caller, id, tenant string) auditor {
	actor := c.KeyID
	switch {
	case actor != "":
	case c.SandboxID != "":
		actor = "token:" + c.SandboxID
	default:
		actor = audit.ActorSystem
	}
	return auditor{a: s.audit, sandbox: id, tenant: tenant, actor: actor}
}

// record appends one event. data is encoded as JSON.
func (r auditor) record(typ string, data any) {
	if r.a == nil {
		return
	}
	b, err := json.Marshal(data)
	if err != nil {
		r.a.log.Error("encode audit event", "type", typ, "err", err)
		return
	}
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	h := r.a.head(r.sandbox)
	h.tenant = r.tenant
	r.append(h, typ, b)
}

// tenantOf returns the tenant of a sandbox the log has recorded since
// this process started ("" if none).
func (a *auditLog) tenantOf(id string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if h := a.heads[id]; h != nil {
		return h.tenant
	}
	return ""
}

// append links and queues an event. a.mu is held.
func (r auditor) append(h *auditHead, typ string, data []byte) {
	e := audit.Event{Time: r.a.now(), Sandbox: r.sandbox, Tenant: r.tenant, Actor: r.actor, Type: typ, Data: data}
	if err := audit.Link(&audit.Event{Seq: h.seq, Hash: h.hash}, &e); err != nil {
		r.a.log.Error("link audit event", "type", typ, "err", err)
		return
	}
	h.seq, h.hash = e.Seq, e.Hash
	r.a.pending.add(e.Tenant, store.AuditEventBytes(e))
	if r.a.journal != nil {
		// First: the batch holding it may be written as soon as it is
		// queued.
		r.a.journal.add(e)
	}
	r.a.Add(e)
	if r.a.notify != nil {
		r.a.notify(e)
	}
}

// output records a piece of a command's or terminal's output, unless the
// sandbox's output allowance is spent or its tenant has reached its
// storage quota: then one audit.output_capped event says which, and the
// sandbox's output is no longer recorded.
func (r auditor) output(typ string, fields map[string]any, p []byte) {
	if r.a == nil || len(p) == 0 {
		return
	}
	// Read before the lock: it may read the tenant from the store.
	quota := r.a.quota(r.tenant)
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	h := r.a.head(r.sandbox)
	if h.capped {
		return
	}
	var why map[string]any
	if h.out+int64(len(p)) > r.a.outCap {
		why = map[string]any{"reason": "output_cap", "limit_bytes": r.a.outCap}
	} else if quota > 0 {
		if used := r.a.storageUsed(r.tenant); used >= quota {
			why = map[string]any{"reason": "storage_quota", "limit_bytes": quota, "used_bytes": used}
		}
	}
	if why != nil {
		h.capped = true
		b, _ := json.Marshal(why)
		r.append(h, audit.OutputCapped, b)
		return
	}
	h.out += int64(len(p))
	fields["bytes"] = len(p)
	if utf8.Valid(p) {
		fields["data"] = string(p)
	} else {
		fields["data"], fields["encoding"] = base64.StdEncoding.EncodeToString(p), "base64"
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return
	}
	r.append(h, typ, b)
}

// forget marks a stopped sandbox's head for removal from memory a minute
// from now (sweep): the calls that end it are still recorded without a
// store round trip, and a later event reloads the head from the store.
func (a *auditLog) forget(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if h := a.heads[id]; h != nil {
		h.stopped = a.now()
	}
}

// sweep drops the heads of sandboxes stopped over a minute ago.
func (a *auditLog) sweep() {
	a.mu.Lock()
	defer a.mu.Unlock()
	cut := a.now().Add(-time.Minute)
	for id, h := range a.heads {
		if !h.stopped.IsZero() && h.stopped.Before(cut) {
			delete(a.heads, id)
		}
	}
}

// scrubber returns what takes the values of the secrets bound to sandbox
// id out of its log (nil: none bound).
func (s *Service) scrubber(id string) *audit.Scrubber {
	if ns := s.netState(id); ns != nil {
		return ns.scrub
	}
	return nil
}

// AuditLog sends a sandbox's audit events, filtered, to out in order. The
// log outlives the sandbox: a stopped sandbox's log is read the same way.
func (s *Service) AuditLog(ctx context.Context, c Caller, id string, f store.AuditFilter, out func(audit.Event) error) error {
	if _, err := s.resolve(ctx, c, id); err != nil {
		return err
	}
	s.audit.Flush() // what happened before this call is in the answer
	const page = 1000
	limit := f.Limit
	for {
		pf := f
		pf.Limit = page
		if limit > 0 {
			pf.Limit = min(page, limit)
		}
		events, err := s.st.AuditEvents(ctx, id, pf)
		if err != nil {
			return err
		}
		for _, e := range events {
			if err := out(e); err != nil {
				return err
			}
			f.AfterSeq = e.Seq
		}
		if limit > 0 {
			if limit -= len(events); limit <= 0 {
				return nil
			}
		}
		if len(events) < pf.Limit {
			return nil
		}
	}
}

// VerifyAudit checks a sandbox's stored log against its hash chain and
// its recorded head. Events recorded while it reads (a running sandbox)
// are past the head it read first, and are left for the next check.
func (s *Service) VerifyAudit(ctx context.Context, c Caller, id string) (audit.Result, error) {
	if _, err := s.resolve(ctx, c, id); err != nil {
		return audit.Result{}, err
	}
	s.audit.Flush()
	seq, hash, err := s.st.AuditHead(ctx, id)
	if err != nil {
		return audit.Result{}, err
	}
	var v audit.Verifier
	// The whole chain, every type: a filter would break it.
pages:
	for after := int64(0); ; {
		events, err := s.st.AuditEvents(ctx, id, store.AuditFilter{AfterSeq: after, Limit: 1000})
		if err != nil {
			return audit.Result{}, err
		}
		for _, e := range events {
			if e.Seq > seq {
				break pages
			}
			v.Add(e)
			after = e.Seq
		}
		if len(events) < 1000 {
			break
		}
	}
	v.Head(seq, hash)
	return v.Result(), nil
}

// recordCreated records a sandbox's start with what it was given (never
// its environment's values or its secrets' values).
func (s *Service) recordCreated(c Caller, rec sandboxrec.Sandbox) {
	data := map[string]any{
		"template":  rec.Template,
		"limits":    map[string]any{"cpus": rec.CPUs, "memory_mb": rec.MemoryMB, "pids": rec.Pids, "disk_mb": rec.DiskMB},
		"timeout_s": int64(rec.ExpiresAt.Sub(rec.CreatedAt) / time.Second), "idle_timeout_s": rec.IdleTimeoutS,
		"metadata": rec.Metadata, "env": slices.Sorted(maps.Keys(rec.Env)),
	}
	if rec.Network != "" {
		data["network"] = json.RawMessage(rec.Network)
	}
	if ns := s.netState(rec.ID); ns != nil && len(ns.secrets) > 0 {
		data["secrets"] = ns.secrets
	}
	s.auditor(c, rec.ID, rec.TenantID).record(audit.SandboxCreated, data)
}

// recordStopped records a sandbox's end: destroyed by a caller, expired
// (its timeout or idle timeout), or the end of a failed one.
func (s *Service) recordStopped(c Caller, rec sandboxrec.Sandbox) {
	r := s.auditor(c, rec.ID, rec.TenantID)
	switch {
	case rec.State == sandboxrec.Failed:
		r.record(audit.SandboxDestroyed, map[string]any{"reason": "failed: " + rec.Reason})
	case rec.Reason == ReasonExpired:
		r.record(audit.SandboxExpired, map[string]any{"reason": "timeout"})
	case rec.Reason == ReasonIdle:
		r.record(audit.SandboxExpired, map[string]any{"reason": "idle"})
	default:
		r.record(audit.SandboxDestroyed, map[string]any{"reason": "deleted"})
	}
	s.audit.forget(rec.ID)
}

// recordNet records one of the egress proxy's events.
func (s *Service) recordNet(e egress.Event) {
	r := s.auditor(Caller{}, e.SandboxID, e.TenantID)
	switch e.Kind {
	case egress.KindSecretInjected:
		r.record(audit.SecretInjected, map[string]any{"name": e.Secret, "host": e.Host, "port": e.Port})
	case egress.KindSecretMisdirected:
		r.record(audit.SecretMisdirect, map[string]any{"name": e.Secret, "host": e.Host, "port": e.Port})
	default:
		// The event as the network log shows it, without what the audit
		// event says already.
		var data map[string]any
		b, _ := json.Marshal(e)
		if err := json.Unmarshal(b, &data); err != nil {
			s.log.Error("audit net event", "err", err)
			return
		}
		delete(data, "seq")
		delete(data, "sandbox_id")
		delete(data, "tenant_id")
		r.record(audit.NetConnection, data)
	}
}

// RecordRequest adds an api.request event for a call c made on the
// sandbox: the route's pattern, never its query or body. A sandbox c may
// not see records nothing.
func (s *Service) RecordRequest(ctx context.Context, c Caller, id, method, route string, status int, d time.Duration) {
	tenant := s.audit.tenantOf(id)
	if tenant == "" {
		rec, err := s.st.GetSandbox(context.WithoutCancel(ctx), id)
		if err != nil {
			return
		}
		tenant = rec.TenantID
	}
	if tenant != c.TenantID || (c.SandboxID != "" && c.SandboxID != id) {
		return
	}
	s.auditor(c, id, tenant).record(audit.APIRequest, map[string]any{
		"method": method, "route": route, "status": status, "duration_ms": float64(d.Microseconds()) / 1000})
}

// RecordTask adds a task.started or task.finished event (the task that
// runs in the sandbox) to the sandbox's log, the tenant's event stream and
// its webhooks. Other types, or a sandbox c may not see, record nothing.
func (s *Service) RecordTask(ctx context.Context, c Caller, id, typ string, data map[string]any) {
	if typ != audit.TaskStarted && typ != audit.TaskFinished {
		return
	}
	rec, err := s.resolve(context.WithoutCancel(ctx), c, id)
	if err != nil {
		return
	}
	s.auditor(c, id, rec.TenantID).record(typ, data)
}

// RecordApproval adds an approval.requested or approval.decided event to
// the sandbox's log, the tenant's event stream and its webhooks, with
// the key that decided as its actor (c with no key: the system). Other
// types, or a sandbox of another tenant, record nothing.
func (s *Service) RecordApproval(ctx context.Context, c Caller, id, typ string, data any) {
	if typ != audit.ApprovalRequested && typ != audit.ApprovalDecided {
		return
	}
	rec, err := s.resolve(context.WithoutCancel(ctx), c, id)
	if err != nil {
		s.log.Warn("record approval event", "sandbox", id, "type", typ, "err", err)
		return
	}
	s.auditor(c, id, rec.TenantID).record(typ, data)
}

// pruneAudit deletes the logs whose newest event is older than the
// retention, at most once per auditPruneEvery. The reaper calls it.
func (s *Service) pruneAudit(ctx context.Context) {
	s.audit.sweep()
	now := s.now()
	if now.Sub(s.audit.pruned) < auditPruneEvery {
		return
	}
	s.audit.pruned = now
	n, err := s.st.PruneAudit(ctx, now.Add(-s.opts.AuditRetention))
	if err != nil {
		s.log.Error("prune audit logs", "err", err)
		return
	}
	if n > 0 {
		s.log.Info("pruned audit logs past retention", "logs", n)
	}
	// The approvals go with the logs that record them.
	if n, err = s.st.PruneApprovals(ctx, now.Add(-s.opts.AuditRetention)); err != nil {
		s.log.Error("prune approvals", "err", err)
	} else if n > 0 {
		s.log.Info("pruned approvals past retention", "approvals", n)
	}
}
