package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/live"
	"github.com/airlockhq/airlock/internal/metrics"
	"github.com/airlockhq/airlock/internal/pricing"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/store"
)

// Options tunes a Service. Zero fields take defaults.
type Options struct {
	// Now is the clock for created_at, expires_at and expiry; tests set it.
	Now func() time.Time
	// ReapInterval bounds how late an expired sandbox is destroyed (the
	// reaper also wakes at the next known expiry). Default 1 s.
	ReapInterval time.Duration
	// HostCPUs and HostMemoryMB refuse, with ErrLimitExceeded, a sandbox no
	// host could hold. HostCPUs defaults to the host's CPU count;
	// HostMemoryMB 0 leaves the memory check to the runtime.
	HostCPUs     int
	HostMemoryMB int64
	// Largest, when set, is the most CPUs and memory one of the nodes
	// sandboxes are placed on has; it replaces HostCPUs and HostMemoryMB
	// for a control plane whose sandboxes run on other hosts. ok false
	// (no node has told its size yet) leaves the check to placement.
	Largest func() (cpus int, memoryMB int64, ok bool)
	// Logger receives what the background work (reaper, reconcile) cannot
	// return to a caller. Default slog.Default().
	Logger *slog.Logger
	// Egress configures the egress proxy; nil runs without one, and only
	// the network policy "none" is accepted.
	Egress *egress.Config
	// Secrets seals secret values at rest; nil refuses secrets.
	Secrets *secrets.Box
	// AuditOutputCap bounds the command and terminal output recorded in
	// each sandbox's audit log (default DefaultAuditOutputCap).
	AuditOutputCap int64
	// OnAudit, when set, sees every audit event as it is recorded, in
	// each sandbox's order (events, webhooks, metrics). It is called with
	// the log's lock held: it must return at once and never call back
	// into the Service.
	OnAudit func(audit.Event)
	// Tracer starts the spans of creates and commands; nil traces
	// nothing.
	Tracer trace.Tracer
	// AuditRetention is how long a sandbox's audit log is kept after its
	// newest event (default DefaultAuditRetention).
	AuditRetention time.Duration
	// Metrics receives the Prometheus counters and histograms (creates,
	// execs, egress, audit events) and serves sandboxes by state; nil
	// runs without.
	Metrics *metrics.Metrics
	// DataDir is where the store and the sandboxes live; with
	// MinFreeDiskPercent > 0, new sandboxes are refused (ErrLowDisk)
	// while its filesystem has less than that share free.
	DataDir            string
	MinFreeDiskPercent float64
	// NodeLost says whether the named node (not "local") is lost, and
	// why; a running sandbox there shows as unreachable. Nil: none is.
	NodeLost func(node string) (reason string, lost bool)
	// Prices turns usage into cost (airlock serve --prices); nil prices
	// nothing, and budgets in USD are refused.
	Prices *pricing.Table
	// OnModelCall, when set, sees each model call through a sandbox's
	// egress proxy once it is counted (or refused for a spent budget),
	// before the proxy passes the answer's end on. It must return soon.
	OnModelCall func(ModelCall)
}

// Service is the sandbox layer on a store and a runtime: what the API
// (api.Manager) and tasks (tasks.Sandboxes) call. Every method that takes
// a Caller treats a sandbox of another tenant (or, for a token, any other
// sandbox) exactly as a sandbox that does not exist. It owns the reaper
// goroutine (stopped by Close) but neither the store nor the runtime: the
// caller closes those after Close.
type Service struct {
	st   Store
	rt   runtime.Runtime
	opts Options
	log  *slog.Logger

	// locks serialize state changes of one sandbox (create, delete,
	// timeout, expiry) and the quota check-and-insert of one tenant, so
	// two racing creates cannot both fit under the last free slot.
	locks keyedMutex

	proxy *egress.Proxy // nil without egress
	// egressNext is told of each egress event after the service (the
	// caller's Options.Egress.OnEvent).
	egressNext func(egress.Event)
	// following are the nodes whose egress journal a goroutine follows
	// (egress_remote.go); netMu guards it.
	following map[string]bool
	netlog    *netLog
	conns     *liveConns // connections in flight (liveconns.go)
	tracer    trace.Tracer
	audit     *auditLog
	netMu     sync.Mutex
	attached  map[string]*netState // by sandbox id

	// unattached are running sandboxes on nodes that could not be reached
	// when this service started: NodeBack attaches them.
	unattachedMu sync.Mutex
	unattached   map[string]string // sandbox id -> node
	work         *live.Work        // background processes, commands and sessions (internal/live)
	idle         idleTracker
	tenants      tenantCache  // for quota checks
	disk         diskGuard    // the data dir's free space
	box          *secrets.Box // nil: no secrets
	meter        *meter       // usage of running sandboxes (metering.go)
	// adoptLater are the sandboxes found paused at reconcile: their live
	// work is adopted when they resume (a frozen agent cannot answer).
	adoptLater idSet

	kick chan struct{} // wakes the reaper when an expiry moves closer
	// wakeMu guards wakeAt, when the sleeping reaper will next look; zero
	// while it is looking, so no expiry set meanwhile can be missed.
	wakeMu   sync.Mutex
	wakeAt   time.Time
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	// life ends at Close: connections into ports cut then are logged cut
	// (liveconns.go).
	life    context.Context
	endLife context.CancelFunc
}

// NewManager reconciles the store with the runtime (the daemon may have
// restarted, and sandboxes may have died or been orphaned meanwhile), then
// starts the expiry reaper.
func NewManager(ctx context.Context, st Store, rt runtime.Runtime, opts Options) (*Service, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ReapInterval <= 0 {
		opts.ReapInterval = time.Second
	}
	if opts.HostCPUs <= 0 {
		opts.HostCPUs = goruntime.NumCPU()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.OnAudit = countAudit(opts.Metrics, opts.OnAudit)
	s := &Service{
		st: st, rt: rt, opts: opts, log: opts.Logger,
		kick:     make(chan struct{}, 1),
		attached: map[string]*netState{}, following: map[string]bool{},
		box:  opts.Secrets,
		disk: diskGuard{dir: opts.DataDir, minPct: opts.MinFreeDiskPercent, log: opts.Logger},
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	s.life, s.endLife = context.WithCancel(context.Background())
	s.work = live.New(liveHost{s}, opts.Logger)
	s.netlog = newNetLog(st, opts.Logger)
	s.conns = newLiveConns(st, opts.Logger)
	s.startMetering()
	if opts.AuditOutputCap <= 0 {
		opts.AuditOutputCap = DefaultAuditOutputCap
	}
	if opts.AuditRetention <= 0 {
		opts.AuditRetention = DefaultAuditRetention
	}
	s.opts = opts
	s.tracer = opts.Tracer
	if s.tracer == nil {
		s.tracer = noop.NewTracerProvider().Tracer("")
	}
	s.audit = newAuditLog(st, opts.Logger, opts.Now, opts.AuditOutputCap, s.storageQuota, opts.OnAudit)
	if opts.DataDir != "" {
		// Before anything reads a chain's head from the store.
		j, err := openAuditJournal(ctx, opts.DataDir, st, opts.Logger)
		if err != nil {
			s.closeNetwork()
			s.stopMetering()
			s.audit.Close()
			s.conns.Close()
			return nil, err
		}
		s.audit.journal = j
	}
	if opts.Egress != nil {
		cfg := *opts.Egress
		s.egressNext = cfg.OnEvent
		cfg.OnOpen = func(e egress.Event) func() { return s.conns.open(e.SandboxID, connEgress, e) }
		cfg.OnEvent = s.egressEvent
		if cfg.Logger == nil {
			cfg.Logger = opts.Logger
		}
		s.proxy = egress.New(cfg)
	}
	if err := s.reconcile(ctx); err != nil {
		s.closeNetwork()
		s.stopMetering()
		s.audit.Close()
		s.audit.journal.close()
		s.conns.Close()
		return nil, err
	}
	go s.reapLoop()
	return s, nil
}

// EndStreams ends every follow of a process's or command's output, now
// and to come: the server is going away, and the processes are not.
func (s *Service) EndStreams() { s.work.EndStreams() }

// Close stops the reaper and waits for it. Sandboxes keep running: a new
// Service re-attaches to them.
func (s *Service) Close() error {
	s.stopOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.saveIdle(context.Background(), true)
		s.endLife()
		s.work.Close() // its followers write their last output to the audit log
		s.conns.cutPorts()
		s.closeNetwork()
		s.stopMetering() // after the network: cut connections count
		s.audit.Close()
		s.audit.journal.close() // emptied: the store has every event
		s.conns.Close()         // last: the cut connections leave its list
	})
	return nil
}

// closeNetwork stops every proxy attachment (the sandboxes keep running; a
// new Service attaches again) and writes out the egress log.
func (s *Service) closeNetwork() {
	s.netMu.Lock()
	ids := make([]string, 0, len(s.attached))
	for id := range s.attached {
		ids = append(ids, id)
	}
	s.netMu.Unlock()
	for _, id := range ids {
		s.netMu.Lock()
		ns := s.attached[id]
		delete(s.attached, id)
		s.netMu.Unlock()
		if ns != nil {
			ns.att.Leave()
		}
	}
	s.netlog.Close()
}

func (s *Service) now() time.Time { return s.opts.Now() }

// newID returns "sb-" and 16 random hex digits: unguessable, so an id seen
// in one tenant's logs gives nothing away about another's, and valid as a
// runtime id ([a-z0-9-], at most 63).
func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("sandbox id: %w", err)
	}
	return "sb-" + hex.EncodeToString(b[:]), nil
}

// resolve loads a sandbox record the caller may see. Another tenant's
// sandbox, or for a token any other sandbox, is reported exactly like one
// that does not exist, so ids cannot be probed across tenants.
func (s *Service) resolve(ctx context.Context, c Caller, id string) (sandboxrec.Sandbox, error) {
	notFound := fmt.Errorf("%w: sandbox %s", ErrNotFound, id)
	if id == "" || c.TenantID == "" || (c.SandboxID != "" && c.SandboxID != id) {
		return sandboxrec.Sandbox{}, notFound
	}
	rec, err := s.st.GetSandbox(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return sandboxrec.Sandbox{}, notFound
	}
	if err == nil && rec.TenantID == c.TenantID {
		s.idle.touch(id, s.now())
	}
	if err != nil {
		return sandboxrec.Sandbox{}, fmt.Errorf("load sandbox %s: %w", id, err)
	}
	if rec.TenantID != c.TenantID {
		return sandboxrec.Sandbox{}, notFound
	}
	return rec, nil
}

// live resolves a sandbox that must be running and returns its runtime
// side. A record that says running while the runtime has lost the sandbox
// is marked failed on the spot.
func (s *Service) live(ctx context.Context, c Caller, id string) (sandboxrec.Sandbox, runtime.Sandbox, error) {
	return s.liveBy(ctx, c, id, s.rt.Get)
}

// liveLazy is live for a caller that maps the runtime's ErrNotFound from
// its next call on the sandbox with lostError: the runtime is not asked
// first whether the sandbox is there (on a node, a round trip saved).
func (s *Service) liveLazy(ctx context.Context, c Caller, id string) (sandboxrec.Sandbox, runtime.Sandbox, error) {
	return s.liveBy(ctx, c, id, func(ctx context.Context, id string) (runtime.Sandbox, error) {
		return runtime.GetLazy(ctx, s.rt, id)
	})
}

func (s *Service) liveBy(ctx context.Context, c Caller, id string, get func(context.Context, string) (runtime.Sandbox, error)) (sandboxrec.Sandbox, runtime.Sandbox, error) {
	rec, err := s.resolve(ctx, c, id)
	if err != nil {
		return rec, nil, err
	}
	if rec, err = s.awake(ctx, c, rec); err != nil {
		return rec, nil, err
	}
	if err := notRunning(rec); err != nil {
		return rec, nil, err
	}
	sb, err := get(ctx, id)
	if errors.Is(err, runtime.ErrNotFound) {
		return rec, nil, s.markLost(ctx, id, err)
	}
	if err != nil {
		return rec, nil, fmt.Errorf("%w: sandbox %s: %v", ErrUnavailable, id, err)
	}
	return rec, sb, nil
}

// notRunning says why a sandbox in rec's state cannot run anything.
func notRunning(rec sandboxrec.Sandbox) error {
	switch rec.State {
	case sandboxrec.Running:
		return nil
	case sandboxrec.Paused:
		return pausedError(fmt.Sprintf("sandbox %s is paused: resume it first", rec.ID))
	case sandboxrec.Failed:
		return fmt.Errorf("%w: sandbox %s failed: %s", ErrConflict, rec.ID, rec.Reason)
	default:
		return fmt.Errorf("%w: sandbox %s is %s", ErrConflict, rec.ID, rec.State)
	}
}

// lostError is what an operation on a live sandbox returns when the
// runtime says "not found": if the sandbox itself is gone, the record is
// marked failed and ErrConflict returned; if not, the not-found was about
// something inside it and ok is false.
func (s *Service) lostError(ctx context.Context, id string, err error) (lost error, ok bool) {
	if !errors.Is(err, runtime.ErrNotFound) {
		return nil, false
	}
	if _, gerr := s.rt.Get(ctx, id); !errors.Is(gerr, runtime.ErrNotFound) {
		return nil, false
	}
	return s.markLost(ctx, id, err), true
}

// markLost records that the runtime no longer has a sandbox the record
// says is running, unless a delete or the reaper stopped it meanwhile, and
// returns why it cannot be used.
func (s *Service) markLost(ctx context.Context, id string, cause error) error {
	unlock := s.locks.lock(id)
	defer unlock()
	ctx = context.WithoutCancel(ctx)
	rec, err := s.st.GetSandbox(ctx, id)
	if err != nil {
		return fmt.Errorf("load sandbox %s: %w", id, err)
	}
	if alive(rec.State) {
		s.log.Warn("sandbox lost by the runtime", "sandbox", id, "err", cause)
		s.detach(id)
		s.work.Drop(id)
		rec.State, rec.Reason, rec.EndedAt = sandboxrec.Failed, "lost: runtime sandbox gone", s.now()
		// Saved as failed, it loses its tokens in the same write.
		if err := s.st.UpdateSandbox(ctx, rec); err != nil {
			return fmt.Errorf("mark sandbox %s failed: %w", id, err)
		}
		s.meterEnd(ctx, rec)
	}
	return notRunning(rec)
}

// alive says whether a sandbox in state holds a runtime sandbox that is
// meant to be there: running or paused.
func alive(state string) bool { return state == sandboxrec.Running || state == sandboxrec.Paused }

// keyedMutex is a mutex per key, created on demand and dropped when unused.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*refMutex
}

type refMutex struct {
	sync.Mutex
	n int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*refMutex{}
	}
	l := k.m[key]
	if l == nil {
		l = &refMutex{}
		k.m[key] = l
	}
	l.n++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.n--; l.n == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
