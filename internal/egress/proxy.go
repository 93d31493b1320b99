package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Ports of the proxy's listeners inside a sandbox's network namespace.
const (
	HTTPPort  = 3128
	SOCKSPort = 1080
)

// Env is what a sandbox with a proxy gets in its environment. Programs that
// ignore these variables have no network at all.
func Env() map[string]string {
	httpProxy := "http://127.0.0.1:3128"
	socks := "socks5h://127.0.0.1:1080"
	noProxy := "localhost,127.0.0.1,::1"
	return map[string]string{
		"HTTP_PROXY": httpProxy, "http_proxy": httpProxy,
		"HTTPS_PROXY": httpProxy, "https_proxy": httpProxy,
		"ALL_PROXY": socks, "all_proxy": socks,
		"NO_PROXY": noProxy, "no_proxy": noProxy,
	}
}

// Config tunes the proxy. Zero fields take defaults.
type Config struct {
	// DNS is the resolver the proxy asks (host:port, UDP and TCP); empty
	// means the host's own.
	DNS string
	// RootCAs are extra roots trusted when the proxy itself opens TLS to an
	// upstream (credential injection); nil means the host's roots only.
	RootCAs *x509.CertPool
	// AllowPrivate is the operator's opening of forbidden addresses for
	// every sandbox (airlock serve --egress-allow-private), each checked
	// by ParseAllowPrivate. Without it no rule of a tenant reaches
	// loopback, private, link-local, metadata, CGNAT, multicast, reserved
	// or the host's own addresses; with it, a tenant's IP/CIDR rule must
	// still list the address (Rules.AllowsIP).
	AllowPrivate []netip.Prefix
	// OwnRules says the rules are the operator's own word (airlock run,
	// embedded, for the person at the terminal): an IP/CIDR allow rule
	// then opens the forbidden addresses it lists, as AllowsIP reads it.
	OwnRules bool
	// MaxConns bounds a sandbox's open connections to the proxy (default 256).
	MaxConns int
	// IdleTimeout closes a connection or tunnel quiet in both directions
	// this long (default 5 min).
	IdleTimeout time.Duration
	// DialTimeout bounds name resolution plus connecting upstream (default 10 s).
	DialTimeout time.Duration
	// LogSize is how many events Sandbox.Log keeps in memory per sandbox;
	// 0 keeps none (the daemon stores every event through OnEvent, and a
	// second copy in memory would only cost it).
	LogSize int
	// AllowHint, if set, says how to allow a denied target (host:port) of a
	// sandbox, in the proxy's 403 answers; the default names the API route.
	AllowHint func(sandboxID, target string) string
	// OnEvent, if set, receives every event as it is logged (the audit log).
	OnEvent func(Event)
	// OnOpen, if set, is told of each connection the proxy carries to an
	// upstream as it opens (the event as known then), and the function it
	// returns as it ends: the daemon keeps a durable list of connections
	// in flight, so a crash cuts none unlogged.
	OnOpen func(Event) (ended func())
	// Ask, if set, is the approvals service: the proxy calls it for each
	// connection a policy's ask holds (Policy.Ask) and carries or refuses
	// the connection by its answer. It blocks until a person decides or
	// ctx ends, which happens at the policy's ask timeout, when every
	// client waiting on the answer has hung up, or when the sandbox
	// closes; it must return soon after, and the proxy refuses the held
	// connections then without waiting for it. Connections of one
	// sandbox to one host and port held at the same time share one call.
	// Without it, such connections are refused.
	Ask    func(ctx context.Context, q AskRequest) (AskAnswer, error)
	Logger *slog.Logger
}

// Proxy is the daemon's egress proxy: one per daemon, attached to each
// sandbox that may reach out through listeners in that sandbox's network
// namespace.
type Proxy struct {
	cfg Config
	// lookup resolves a name the rules allowed (p.resolver's LookupNetIP;
	// tests watch the names it is asked).
	lookup   func(ctx context.Context, name string) ([]netip.Addr, error)
	resolver *net.Resolver
	host     hostAddrs
}

// New returns a proxy with cfg.
func New(cfg Config) *Proxy {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 256
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Proxy{cfg: cfg, resolver: net.DefaultResolver}
	if cfg.DNS != "" {
		var d net.Dialer
		p.resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, cfg.DNS)
		}}
	}
	p.lookup = func(ctx context.Context, name string) ([]netip.Addr, error) {
		return p.resolver.LookupNetIP(ctx, "ip", name)
	}
	return p
}

// Sandbox is one sandbox's attachment to the proxy: its rules, listeners,
// open connections, event log and byte counts.
type Sandbox struct {
	p      *Proxy
	id     string
	tenant string
	rules  atomic.Pointer[Rules]
	log    *eventLog
	up     atomic.Int64
	down   atomic.Int64

	// secrets are the bindings and CA in force; nil: no interception.
	secrets atomic.Pointer[secretSet]
	// gate is the model-call budget check in force (SetModelGate).
	gate atomic.Pointer[modelGate]

	// asks are the calls of Config.Ask in flight, by target (host:port),
	// each shared by every connection held for it.
	askMu sync.Mutex
	asks  map[string]*pendingAsk

	mu     sync.Mutex
	lns    []net.Listener
	conns  map[net.Conn]struct{}
	ups    map[net.Conn]struct{} // upstream connections, cut by Close too
	closed bool
	wg     sync.WaitGroup

	// ctx ends with Close, so a dial in progress does not hold Close up
	// for the dial timeout.
	ctx    context.Context
	cancel context.CancelFunc
}

// Attach serves sandbox id's traffic arriving on its listeners under rules:
// httpLn takes HTTP proxy requests and CONNECT, socksLn SOCKS5. Either may
// be nil. The listeners are closed by Close.
func (p *Proxy) Attach(id, tenant string, rules *Rules, httpLn, socksLn net.Listener) *Sandbox {
	s := &Sandbox{p: p, id: id, tenant: tenant, log: newEventLog(p.cfg.LogSize),
		conns: map[net.Conn]struct{}{}, ups: map[net.Conn]struct{}{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.rules.Store(rules)
	for _, l := range []struct {
		ln    net.Listener
		serve func(net.Conn)
	}{{httpLn, s.serveHTTP}, {socksLn, s.serveSOCKS}} {
		if l.ln == nil {
			continue
		}
		s.lns = append(s.lns, l.ln)
		s.wg.Add(1)
		go s.acceptLoop(l.ln, l.serve)
	}
	return s
}

// SetRules replaces the rules; new connections and requests use them.
// Tunnels already open stay open.
func (s *Sandbox) SetRules(r *Rules) { s.rules.Store(r) }

// Rules returns the rules in force.
func (s *Sandbox) Rules() *Rules { return s.rules.Load() }

// Log returns up to limit kept events with a seq above after.
func (s *Sandbox) Log(after int64, limit int) []Event { return s.log.since(after, limit) }

// Bytes returns the bytes sent from and to the sandbox so far.
func (s *Sandbox) Bytes() (up, down int64) { return s.up.Load(), s.down.Load() }

// Close stops the listeners, cuts every open connection, the sandbox's and
// the upstream ones, and waits for their goroutines. Cutting only the
// sandbox's side would leave a request waiting on a silent upstream (plain
// or intercepted) until the idle timeout.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	var errs []error
	for _, ln := range s.lns {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for c := range s.conns {
		c.Close()
	}
	for c := range s.ups {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return errors.Join(errs...)
}

func (s *Sandbox) acceptLoop(ln net.Listener, serve func(net.Conn)) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		if !s.track(c) {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			serve(c)
		}()
	}
}

// track registers c, or refuses it past the connection limit (logged) or
// after Close.
func (s *Sandbox) track(c net.Conn) bool {
	s.mu.Lock()
	full := len(s.conns) >= s.p.cfg.MaxConns
	ok := !s.closed && !full
	if ok {
		s.conns[c] = struct{}{}
	}
	s.mu.Unlock()
	if !ok {
		if full {
			s.event(Event{Protocol: "tcp", Decision: Denied, Reason: "too many open connections (limit " + strconv.Itoa(s.p.cfg.MaxConns) + ")"})
		}
		c.Close()
	}
	return ok
}

// holdUp registers an upstream connection, whose event is ev so far, for
// Close to cut, or cuts it at once after Close; the returned func forgets
// it.
func (s *Sandbox) holdUp(up net.Conn, ev Event) (release func()) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		up.Close()
		return func() {}
	}
	s.ups[up] = struct{}{}
	s.mu.Unlock()
	ended := func() {}
	if s.p.cfg.OnOpen != nil {
		ev.Time, ev.Decision = time.Now().UTC(), Allowed
		ev.SandboxID, ev.TenantID = s.id, s.tenant
		ended = s.p.cfg.OnOpen(ev)
	}
	return func() {
		s.mu.Lock()
		delete(s.ups, up)
		s.mu.Unlock()
		ended()
	}
}

func (s *Sandbox) untrack(c net.Conn) {
	c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// event stamps and logs e. A connection the proxy carried that ends
// after Close was cut by it: the daemon stops (or the sandbox goes).
func (s *Sandbox) event(e Event) {
	e.Time = time.Now().UTC()
	e.SandboxID, e.TenantID = s.id, s.tenant
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed && e.Decision == Allowed && e.Kind == "" {
		// What it then saw (a read that failed, nothing sent) is the
		// cut's doing.
		e.Cut, e.Reason = true, ReasonCut
	}
	e = s.log.add(e)
	if s.p.cfg.OnEvent != nil {
		s.p.cfg.OnEvent(e)
	}
}
