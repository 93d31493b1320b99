package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/agent"
	"github.com/airlockhq/airlock/internal/api"
	"github.com/airlockhq/airlock/internal/approvals"
	"github.com/airlockhq/airlock/internal/console"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/events"
	"github.com/airlockhq/airlock/internal/initbin"
	"github.com/airlockhq/airlock/internal/metrics"
	"github.com/airlockhq/airlock/internal/noderpc"
	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/placement"
	"github.com/airlockhq/airlock/internal/pricing"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/sqlite"
	"github.com/airlockhq/airlock/internal/tasks"
	"github.com/airlockhq/airlock/internal/tenancy"
	"github.com/airlockhq/airlock/internal/tracing"
)

// serveCmd runs the daemon until SIGTERM or SIGINT.
func serveCmd(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:7070", "address to listen on")
	dataDir := dataDirFlag(fs, defaultDataDir(), "where the database, sandboxes and templates live ($AIRLOCK_DATA_DIR)")
	pool := fs.Int("pool", 2, "sandboxes kept booted for fast creates, at least (it grows to the create rate and the last burst; 0 disables)")
	egf := egressFlagsOf(fs)
	var tune daemonTuning
	durationVar(fs, &tune.auditRetention, "audit-retention", sandbox.DefaultAuditRetention, time.Second, 0, "how long (`DURATION`) a sandbox's audit log is kept after its last event")
	outCap := fs.String("audit-output-cap", "64MiB", "command and terminal output recorded per sandbox's audit log (a marker says when it was reached)")
	fs.BoolVar(&tune.webhooksAllowPrivate, "webhooks-allow-private", false, "let webhooks reach loopback, private and link-local addresses (receivers on this host or network)")
	minFree := fs.Float64("min-free-disk", defaultMinFreeDisk, "refuse new sandboxes while the data dir's filesystem has less than this percent free (0: never)")
	durationVar(fs, &tune.nodeGrace, "node-grace", nodes.DefaultGrace, time.Second, 0, "how long (`DURATION`) the sandboxes of a lost node wait for it before they fail")
	fs.BoolVar(&tune.noLocalNode, "no-local-node", false, "run a control plane only: no sandbox on this host, every one on a node that joined (airlock nodes token)")
	storeURL := fs.String("store", os.Getenv(databaseURLEnv), "the database: postgres://... runs this server as one control-plane replica of several on it (needs --no-local-node and $AIRLOCK_MASTER_KEY); default SQLite in the data dir ($"+databaseURLEnv+")")
	tune.kube = kubeFlags(fs)
	advertise := fs.String("advertise-url", "", "with --store postgres: the URL other replicas reach this one on, http://HOST:PORT (default: from --addr)")
	e2bDomainFlag(fs, &tune.e2bDomain)
	pricesFile := fs.String("prices", "", "price table (JSON `FILE`: per model, USD per million input, cached and output tokens; per CPU-second, GiB-second of memory, GiB of egress) that turns usage into cost_usd")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock serve [flags]\n\nRun the server: the REST API under /v1, the console, MCP and the E2B API.\nA DURATION is "+durationSyntax+".")
		printFlags(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *minFree < 0 || *minFree > 100 {
		fmt.Fprintf(os.Stderr, "airlock serve: --min-free-disk %g: want a percent from 0 (no guard) to 100\n", *minFree)
		return exitError(2)
	}
	if tune.minFreeDisk = *minFree; *minFree == 0 {
		tune.minFreeDisk = -1
	}
	mb, err := parseSizeMB(*outCap)
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock serve: --audit-output-cap: %v\n", err)
		return exitError(2)
	}
	tune.auditOutputCap = mb << 20
	if *pricesFile != "" {
		if tune.prices, err = pricing.Load(*pricesFile); err != nil {
			fmt.Fprintf(os.Stderr, "airlock serve: --prices: %v\n", err)
			return exitError(2)
		}
	}
	if err := checkE2BDomain(&tune.e2bDomain); err != nil {
		fmt.Fprintf(os.Stderr, "airlock serve: %v\n", err)
		return exitError(2)
	}
	eg, err := egf.config()
	if err != nil {
		return err
	}
	if v, ok := os.LookupEnv(adminKeyEnv); ok {
		if err := checkAdminKey(v); err != nil {
			fmt.Fprintf(os.Stderr, "airlock serve: %v\n", err)
			return exitError(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if isPostgresURL(*storeURL) {
		return serveReplica(ctx, replicaConfig{addr: *addr, advertise: *advertise, storeURL: *storeURL, dataDir: *dataDir, pool: *pool, eg: eg, tune: tune, kube: tune.kube})
	}
	if *storeURL != "" {
		fmt.Fprintf(os.Stderr, "airlock serve: --store %q: want a postgres:// or postgresql:// URL (SQLite, the default, lives in the data dir)\n", *storeURL)
		return exitError(2)
	}
	d, err := startDaemon(ctx, *dataDir, *pool, eg, nil, tune)
	if err != nil {
		return err
	}
	defer d.shutdown()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	h, con, end := d.serving(ln.Addr())
	defer end()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	// Event streams, task event streams, output follows, MCP and E2B
	// streams never go idle: end them, or Shutdown waits it out.
	srv.RegisterOnShutdown(end)
	fmt.Printf("airlock: serving on http://%s (data in %s)\n", ln.Addr(), *dataDir)
	if con.Built() {
		fmt.Printf("airlock: console at http://%s/ (sign in with an API key)\n", loopbackAddr(ln.Addr()))
	} else {
		fmt.Println("airlock: console not built into this binary (npm ci --prefix web && npm run build --prefix web, then go build)")
	}
	d.sayAdminKey()
	return serveUntil(ctx, srv, func() error { return srv.Serve(ln) }, "airlock: shutting down", 10*time.Second)
}

// serving is the daemon's whole HTTP face on addr (the API, the console,
// MCP and the E2B API, which call the API at addr), and what ends its
// streams, which never go idle on their own.
func (d *daemon) serving(addr net.Addr) (http.Handler, *console.Handler, func()) {
	mcpDone, endMCP := context.WithCancel(context.Background())
	con := console.New()
	eh := newE2B(addr, mcpDone, d.handler, d.e2bDomain, d.trafficKey)
	h := withConsole(con, withE2B(eh, withMCP(d.handler, addr, d.mcpStateKey, mcpDone), mcpDone))
	h = withE2BHosts(eh, h, d.e2bDomain, mcpDone)
	var once sync.Once
	return h, con, func() {
		once.Do(func() {
			d.events.EndStreams()
			d.tasks.EndStreams()
			d.mgr.EndStreams()
			endMCP()
		})
	}
}

// sayAdminKey tells where the admin API key is.
func (d *daemon) sayAdminKey() {
	switch {
	case d.keyPath == "":
		fmt.Printf("airlock: admin API key from $%s\n", adminKeyEnv)
	case d.newKey:
		fmt.Printf("airlock: admin API key written to %s\n", d.keyPath)
	default:
		fmt.Printf("airlock: admin API key is in %s\n", d.keyPath)
	}
}

// serveUntil runs serve (srv's) until it fails or ctx ends, then says
// bye and shuts srv down, waiting up to wait for requests in flight.
func serveUntil(ctx context.Context, srv *http.Server, serve func() error, bye string, wait time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Println(bye)
	shutdown, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// daemon is everything serve wires together.
type daemon struct {
	store    daemonStore
	ownStore bool // opened by the daemon, closed with it
	rt       *linux.Runtime
	mgr      *sandbox.Service
	handler  *api.Handler
	keyPath  string
	newKey   bool
	metrics  *metrics.Metrics // served at /metrics
	events   *events.Hub      // tenant event streams and webhooks
	tracing  *tracing.Tracing // OpenTelemetry, when OTEL_* asks for it
	tasks    *tasks.Service   // harness runs, each in a sandbox of its own
	// modelCalls hands model calls to tasks once it runs (a sandbox
	// reattached at start may call its model before then).
	modelCalls atomic.Pointer[tasks.Service]
	nodes      *nodes.Service // the hosts that joined to run sandboxes
	// approvals: questions the egress proxy puts to a person; set once
	// the sandbox service it records through exists (askThrough).
	approvals atomic.Pointer[approvals.Service]
	// e2bDomain serves sandbox ports at host names (--e2b-domain);
	// trafficKey derives E2B's traffic access tokens (serve_e2b.go).
	e2bDomain  string
	trafficKey []byte
	// mcpStateKey signs MCP's requestState (serve_mcp.go).
	mcpStateKey []byte
}

// modelCall hands a model call through a sandbox's egress proxy to the
// task it belongs to, if any.
func (d *daemon) modelCall(c sandbox.ModelCall) {
	if t := d.modelCalls.Load(); t != nil {
		t.ModelCall(c)
	}
}

// daemonTuning is what serve's flags set beyond the basics; zero fields
// take the defaults.
type daemonTuning struct {
	auditRetention time.Duration
	auditOutputCap int64
	// webhooksAllowPrivate: see events.Options.AllowPrivate.
	webhooksAllowPrivate bool
	// minFreeDisk is the percent of the data dir's filesystem kept free
	// (sandbox.Options.MinFreeDiskPercent): 0 takes defaultMinFreeDisk,
	// below 0 turns the guard off.
	minFreeDisk float64
	// noLocalNode runs a control plane only: every sandbox on a node
	// that joined.
	noLocalNode bool
	// nodeGrace is how long a lost node's sandboxes wait for it before
	// they fail (0: nodes.DefaultGrace).
	nodeGrace time.Duration
	// kube, when enabled, finds nodes by their Leases in a Kubernetes
	// namespace (serve_kube.go) instead of by join tokens.
	kube *kubeConfig
	// store, when set, is a database the daemon shares with other
	// control-plane replicas (and does not close); else it opens SQLite
	// in the data dir.
	store daemonStore
	// e2bDomain serves sandbox ports at PORT-ID.e2bDomain (--e2b-domain).
	e2bDomain string
	// prices turns usage into cost (--prices); nil: none.
	prices *pricing.Table
	// trace, when set, gets the runtime's phase times (linux.Config.Trace;
	// bench burst -v).
	trace func(phase string, d time.Duration)
}

// daemonStore is what serve keeps in its database.
type daemonStore interface {
	store.Store
	nodes.Store
}

// defaultMinFreeDisk is the free share of the data dir's filesystem below
// which new sandboxes are refused.
const defaultMinFreeDisk = 5.0

// wrap, when set, stands between the service and the runtime (the API
// benchmark times the runtime's share this way).
func startDaemon(ctx context.Context, dataDir string, pool int, eg *egress.Config, wrap func(runtime.Runtime) runtime.Runtime, tune daemonTuning) (*daemon, error) {
	if err := os.MkdirAll(dataDir, 0o711); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	st := tune.store
	if st == nil {
		var err error
		if st, err = sqlite.Open(filepath.Join(dataDir, "airlock.db")); err != nil {
			return nil, err
		}
	}
	d := &daemon{store: st, ownStore: tune.store == nil, metrics: metrics.New(nil)}
	var err error
	if d.tracing, err = tracing.Setup(ctx); err != nil {
		st.Close()
		return nil, err
	}
	if !tune.noLocalNode {
		if d.rt, err = linux.New(linux.Config{StateDir: dataDir, PoolSize: pool, SweepEvery: 15 * time.Second, Trace: tune.trace}); err != nil {
			st.Close()
			return nil, err
		}
		if initbin.Program() == "" {
			fmt.Fprintf(os.Stderr, "airlock: warning: sandbox init: %s\n", d.rt.InitSource())
		}
	}
	box, err := secrets.LoadBox(dataDir)
	if err != nil {
		d.close()
		return nil, fmt.Errorf("master key: %w", err)
	}
	d.e2bDomain, d.trafficKey = tune.e2bDomain, box.Derive(trafficKeyPurpose)
	d.mcpStateKey = box.Derive(mcpStateKeyPurpose)
	nodeOpts := nodes.Options{Client: func(hc *http.Client, url string) runtime.Runtime { return noderpc.NewClient(hc, url) },
		Grace: tune.nodeGrace, OnGone: d.nodeGone, OnBack: d.nodeBack}
	// In Kubernetes, nodes register with Leases (a no-op otherwise).
	if err := tune.kube.nodesOptions(ctx, &nodeOpts); err != nil {
		d.close()
		return nil, fmt.Errorf("nodes: %w", err)
	}
	if d.nodes, err = nodes.New(ctx, st, box, nodeOpts); err != nil {
		d.close()
		return nil, fmt.Errorf("nodes: %w", err)
	}
	var rt runtime.Runtime = d.placement(dataDir)
	if wrap != nil {
		rt = wrap(rt)
	}
	if d.events, err = events.New(ctx, st, events.Options{Box: box, AllowPrivate: tune.webhooksAllowPrivate}); err != nil {
		d.close()
		return nil, fmt.Errorf("events: %w", err)
	}
	// A replica keeps no audit journal in its own data dir: the next
	// leader, on another host, could not read it. Each call's audit
	// events are in the shared database before it is answered instead.
	managerDir := dataDir
	if tune.store != nil {
		managerDir = ""
	}
	if d.mgr, err = sandbox.NewManager(ctx, st, rt, sandbox.Options{HostCPUs: goruntime.NumCPU(), HostMemoryMB: hostMemoryMB(), Largest: d.largest(), Egress: d.askThrough(eg), Secrets: box,
		AuditRetention: tune.auditRetention, AuditOutputCap: tune.auditOutputCap, Metrics: d.metrics, OnAudit: d.events.Publish,
		Tracer: d.tracing.Tracer, DataDir: managerDir, MinFreeDiskPercent: tune.minFreeDiskPercent(), NodeLost: d.nodes.Lost,
		Prices: tune.prices, OnModelCall: d.modelCall}); err != nil {
		d.close()
		return nil, err
	}
	d.approvals.Store(newApprovals(st, d.mgr))
	if d.keyPath, d.newKey, err = ensureAdminKey(ctx, st, dataDir); err != nil {
		d.close()
		return nil, err
	}
	taskOpts := tasks.Options{Box: box, Approvals: d.approvals.Load()}
	if d.tracing.Enabled {
		taskOpts.Tracer = d.tracing.Tracer
	}
	if d.tasks, err = tasks.New(ctx, st, d.mgr, taskOpts); err != nil {
		d.close()
		return nil, fmt.Errorf("tasks: %w", err)
	}
	d.modelCalls.Store(d.tasks)
	d.handler = api.New(d.mgr, st, api.Options{Tasks: d.tasks, Metrics: d.metrics, Events: d.events, TraceContext: d.tracing.Enabled, AuditSigner: box.Signer(), DataDir: dataDir,
		AgentProtocol: agent.ProtocolVersion, Nodes: d.nodes, Approvals: d.approvals.Load()})
	return d, nil
}

// placement is the runtime the service uses: sandboxes placed on this
// host's runtime (unless there is none) and on the nodes that joined.
func (d *daemon) placement(dataDir string) *placement.Runtime {
	o := placement.Options{Nodes: d.nodes, Where: func(ctx context.Context, id string) (string, error) {
		rec, err := d.store.GetSandbox(ctx, id)
		return rec.Node, err
	}}
	if d.rt != nil {
		o.Local = d.rt
		o.LocalStatus = func(ctx context.Context) (nodes.Capacity, nodes.Use, error) {
			ids, err := d.rt.List(ctx)
			use := nodes.HostUse(dataDir)
			use.Sandboxes = len(ids)
			return nodes.HostCapacity(dataDir, 0), use, err
		}
	}
	return placement.New(o)
}

// largest is the size of the biggest host a sandbox may be placed on: this
// one's and the nodes'. Without a local node it is the nodes' alone, and
// unknown (placement decides) until one has reported.
func (d *daemon) largest() func() (int, int64, bool) {
	local, localMem := goruntime.NumCPU(), hostMemoryMB()
	return func() (int, int64, bool) {
		var cpus int
		var mem int64
		var ok bool
		if d.nodes != nil {
			cpus, mem, ok = d.nodes.Largest()
		}
		if d.rt == nil {
			return cpus, mem, ok
		}
		return max(cpus, local), max(mem, localMem), true
	}
}

// nodeGone fails the sandboxes of a node lost past its grace period, or
// removed.
func (d *daemon) nodeGone(name, why string) {
	if d.mgr == nil {
		return
	}
	n, err := d.mgr.FailNode(context.Background(), name, why)
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock: %s %s: fail its sandboxes: %v\n", why, name, err)
		return
	}
	if n > 0 {
		fmt.Fprintf(os.Stderr, "airlock: %s %s: %d sandboxes failed\n", why, name, n)
	}
}

// nodeBack destroys, on a node that answers again, the sandboxes that
// failed or were deleted while it was lost, and attaches the others'
// network again.
func (d *daemon) nodeBack(name string) {
	if d.mgr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := d.nodes.Runtime(ctx, name)
	var ids []string
	if err == nil {
		ids, err = rt.List(ctx)
	}
	if err == nil {
		err = d.mgr.NodeBack(ctx, name, ids)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock: node %s back: %v\n", name, err)
	}
}

// shutdown closes the daemon as serve ends: its warm pool is destroyed
// and, when no user sandbox is left on it, its disk pool unmounted and
// the loop device freed. User sandboxes keep running (and their layers
// mounted) for the next start.
func (d *daemon) shutdown() {
	d.close()
	if d.rt == nil {
		return
	}
	switch released, err := d.rt.ReleaseDiskPool(); {
	case err != nil:
		fmt.Fprintf(os.Stderr, "airlock: release disk pool: %v\n", err)
	case released:
		fmt.Println("airlock: disk pool unmounted")
	}
}

// minFreeDiskPercent is --min-free-disk as the service takes it: the zero
// value of a tuning built in code is the default, a negative one (the
// flag's 0) turns the guard off.
func (t daemonTuning) minFreeDiskPercent() float64 {
	switch {
	case t.minFreeDisk == 0:
		return defaultMinFreeDisk
	case t.minFreeDisk < 0:
		return 0
	}
	return t.minFreeDisk
}

func (d *daemon) close() {
	// First: running tasks end and destroy their sandboxes through the
	// manager.
	if d.nodes != nil {
		d.nodes.Close()
	}
	if d.tasks != nil {
		d.tasks.Close()
	}
	if d.mgr != nil {
		d.mgr.Close()
	}
	// After the manager: its last events are queued by then.
	if d.events != nil {
		d.events.Close()
	}
	if d.rt != nil {
		d.rt.Close()
	}
	if d.tracing != nil {
		// The spans still buffered go out, for a bounded time.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := d.tracing.Shutdown(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "airlock: tracing: %v\n", err)
		}
		cancel()
	}
	if d.ownStore {
		d.store.Close()
	}
}

// adminTenant owns the admin key created on first start.
const adminTenant = "admin"

// ensureAdminKey creates the admin tenant and key on first start, stores
// only the key's hash and writes the key to <data-dir>/admin.key (0600).
//
// With $AIRLOCK_ADMIN_KEY set (replicas on one database, a Kubernetes
// Secret), that key is the admin key instead: it is added if the store
// lacks it, and no file is written.
func ensureAdminKey(ctx context.Context, st store.Store, dataDir string) (string, bool, error) {
	if v, ok := os.LookupEnv(adminKeyEnv); ok {
		return "", false, ensureEnvAdminKey(ctx, st, v)
	}
	path := filepath.Join(dataDir, "admin.key")
	if _, err := st.TenantByName(ctx, adminTenant); err == nil {
		return path, false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", false, err
	}
	now := time.Now().UTC()
	t := tenancy.Tenant{ID: "t-" + adminTenant, Name: adminTenant, MaxStorageMB: store.DefaultMaxStorageMB, CreatedAt: now}
	key, hash := api.NewKey()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", false, fmt.Errorf("write admin key: %w", err)
	}
	if _, err := fmt.Fprintln(f, key); err != nil {
		f.Close()
		return "", false, fmt.Errorf("write admin key: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", false, err
	}
	if err := st.CreateTenant(ctx, t); err != nil {
		return "", false, err
	}
	if err := st.CreateKey(ctx, tenancy.Key{ID: "k-admin", TenantID: t.ID, Name: "admin", Hash: hash, Admin: true, CreatedAt: now}); err != nil {
		return "", false, err
	}
	return path, true, nil
}

func hostMemoryMB() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var kb int64
	fmt.Sscanf(string(b), "MemTotal: %d kB", &kb)
	return kb >> 10
}

// egressFlags are the egress proxy's flags, of serve and of node (whose
// proxies serve its sandboxes).
type egressFlags struct {
	dns, caFile  *string
	allowPrivate listFlag
}

func egressFlagsOf(fs *flag.FlagSet) *egressFlags {
	f := &egressFlags{
		dns:    fs.String("egress-dns", "", "resolver the egress proxy asks, HOST:PORT (default: the host's)"),
		caFile: fs.String("egress-ca-file", "", "PEM file of extra CAs the egress proxy trusts when it opens TLS upstream"),
	}
	fs.Var(&f.allowPrivate, "egress-allow-private", "let every sandbox's IP/CIDR allow entries reach this private range, CIDR (repeatable; loopback and host addresses one at a time, as 127.0.0.1/32; see docs/API.md for the risk)")
	return f
}

func (f *egressFlags) config() (*egress.Config, error) {
	return egressConfig(*f.dns, *f.caFile, f.allowPrivate)
}

// egressConfig checks the egress flags: a resolver address with a port,
// a CA file that holds at least one certificate, and private ranges that
// egress.ParseAllowPrivate accepts.
func egressConfig(dns, caFile string, allowPrivate []string) (*egress.Config, error) {
	cfg := &egress.Config{DNS: dns}
	for _, a := range allowPrivate {
		p, err := egress.ParseAllowPrivate(a)
		if err != nil {
			return nil, fmt.Errorf("--egress-allow-private %w", err)
		}
		cfg.AllowPrivate = append(cfg.AllowPrivate, p)
	}
	if dns != "" {
		if _, port, err := net.SplitHostPort(dns); err != nil || port == "" {
			return nil, fmt.Errorf("--egress-dns %q: want HOST:PORT", dns)
		}
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--egress-ca-file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--egress-ca-file %s: no PEM certificate in it", caFile)
		}
	}
	return cfg, nil
}
