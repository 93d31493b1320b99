// Package nodes is the control plane's side of Airlock's nodes: the hosts
// that run sandboxes for it. It keeps the node CA (sealed under the master
// key), mints one-time join tokens, signs a joining node's certificate,
// and watches each node's liveness by calling it over mutual TLS, where
// each side takes only the other's certificate from that CA. The node's
// own side (its identity, the join call, the TLS server) is in node.go.
//
// A node's status reaches the control plane by heartbeat: the control
// plane asks each node every HeartbeatEvery; one not heard from for
// LostAfter is lost.
package nodes

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/noderpc"
	"github.com/airlockhq/airlock/internal/runtime"
)

// States of a node.
const (
	StateJoining  = "joining"  // joined, not heard from yet
	StateReady    = "ready"    // heard from within LostAfter
	StateDraining = "draining" // takes no new sandboxes
	StateLost     = "lost"     // not heard from for LostAfter
)

// Defaults of Options.
const (
	DefaultHeartbeatEvery = 3 * time.Second
	DefaultLostAfter      = 15 * time.Second
	DefaultGrace          = 5 * time.Minute
	DefaultTokenTTL       = time.Hour
	MaxTokenTTL           = 7 * 24 * time.Hour
	MinTokenTTL           = time.Minute
)

// Node is a node as the control plane knows it.
type Node struct {
	Name     string   `json:"name"`
	Addr     string   `json:"addr"`
	State    string   `json:"state"`
	Version  string   `json:"version"`
	Capacity Capacity `json:"capacity"`
	Use      Use      `json:"use"`
	// LastHeartbeat is when the node last answered; nil before its first.
	LastHeartbeat *time.Time `json:"last_heartbeat"`
	JoinedAt      time.Time  `json:"joined_at"`
	// CertExpiresAt is when the node's certificate ends. The control
	// plane renews it once a third of its life is left; a node it could
	// not reach until then joins again, with a new token.
	CertExpiresAt time.Time `json:"certificate_expires_at"`
	// LastError says why the latest heartbeat failed, if it did.
	LastError string `json:"last_error,omitempty"`

	Drained    bool   `json:"-"`
	CertSerial string `json:"-"` // the one certificate the control plane takes from it

	// leaseFor, for a node that registers with a Lease, is how long a
	// renewal lasts: it is lost once LastHeartbeat (its Lease's renewal)
	// is that old.
	leaseFor time.Duration
	// protocol is the node API version a Lease says the node speaks; a
	// node of another is not placed on.
	protocol int
}

// Capacity is what a node offers.
type Capacity struct {
	CPUs      int   `json:"cpus"`
	MemoryMB  int64 `json:"memory_mb"`
	DiskMB    int64 `json:"disk_mb"`
	Sandboxes int   `json:"sandboxes"`
}

// Use is what of it is taken: its 1-minute load average, host memory and
// data-dir disk in use, and the sandboxes it runs.
type Use struct {
	CPUs      float64 `json:"cpus"`
	MemoryMB  int64   `json:"memory_mb"`
	DiskMB    int64   `json:"disk_mb"`
	Sandboxes int     `json:"sandboxes"`
}

// Status is a node's answer to a heartbeat.
type Status struct {
	Name     string   `json:"name"`
	Version  string   `json:"version"`
	Protocol int      `json:"protocol"`
	Capacity Capacity `json:"capacity"`
	Use      Use      `json:"use"`
}

// Protocol is the node API's version; a node whose version the control
// plane does not speak is not taken.
const Protocol = noderpc.Protocol

// JoinToken is a one-time token as stored: only the hash of its secret.
type JoinToken struct {
	ID        string
	Hash      []byte
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	UsedBy    string // the node that joined with it
}

// TokenReply is a minted join token: shown once.
type TokenReply struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	// CAHash pins the control plane's node CA for `airlock node --ca-hash`.
	CAHash string `json:"ca_hash"`
}

// JoinRequest is what a joining node sends.
type JoinRequest struct {
	Token string `json:"token"`
	Name  string `json:"name"`
	Addr  string `json:"addr"`
	CSR   string `json:"csr"`
}

// JoinReply is the joined node's identity.
type JoinReply struct {
	Name        string `json:"name"`
	Certificate string `json:"certificate"`
	CA          string `json:"ca"`
}

// Store keeps nodes, join tokens and the CA; sqlite.Store and
// postgres.Store implement it.
// Its not-found and conflict errors wrap errdefs' kinds.
type Store interface {
	// NodeCA returns the CA's certificate and sealed key (ErrNotFound
	// before the first); PutNodeCA stores them unless a CA is there
	// already, and returns the one stored.
	NodeCA(ctx context.Context) (cert, sealedKey []byte, err error)
	PutNodeCA(ctx context.Context, cert, sealedKey []byte) (storedCert, storedKey []byte, err error)

	CreateJoinToken(ctx context.Context, t JoinToken) error
	JoinToken(ctx context.Context, id string) (JoinToken, error)
	// JoinNode spends the token (unused and unexpired at now, else
	// ErrNotFound) and adds n (ErrConflict if its name is taken), in one
	// transaction.
	JoinNode(ctx context.Context, n Node, tokenID string, now time.Time) error

	ListNodes(ctx context.Context) ([]Node, error)
	GetNode(ctx context.Context, name string) (Node, error)
	// UpdateNodeStatus records a heartbeat's answer.
	UpdateNodeStatus(ctx context.Context, name string, s Status, at time.Time) error
	SetNodeDrained(ctx context.Context, name string, drained bool) error
	// SetNodeCert records the node's renewed certificate: the one the
	// control plane takes from it from now on.
	SetNodeCert(ctx context.Context, name, serial string, expiresAt time.Time) error
	DeleteNode(ctx context.Context, name string) error
}

// Sealer seals the CA key under the master key (secrets.Box).
type Sealer interface {
	Seal(value, ad []byte) []byte
	Open(sealed, ad []byte) ([]byte, error)
}

// Options tune a Service; zero fields take the defaults.
type Options struct {
	HeartbeatEvery time.Duration
	LostAfter      time.Duration
	Now            func() time.Time
	Logger         *slog.Logger
	// Grace is how long a lost node's sandboxes wait for it before they
	// fail (OnGone); default DefaultGrace.
	Grace time.Duration
	// OnGone is called once a node has been lost for Grace (why: "node
	// lost") or removed (why: "node removed"); OnBack when a node lost
	// earlier answers again, and when a node first answers this service.
	// Each runs on its own goroutine.
	OnGone func(name, why string)
	OnBack func(name string)
	// Client makes the runtime client of a node from an HTTP client set
	// up for it (mutual TLS) and its base URL (noderpc.NewClient); nil:
	// Runtime answers that nodes run nothing here.
	Client func(hc *http.Client, baseURL string) runtime.Runtime

	// Discovery, when set, is where the nodes are (in Kubernetes, the
	// Leases they renew; see kube.go) instead of the store: a node is
	// live while its Lease is, draining as its Lease says, and the store
	// and Sealer are not used. Nodes register themselves, so tokens and
	// joins are refused, and the mutual TLS comes from ClusterCAs.
	Discovery  Discovery
	ClusterCAs *ClusterCAs
}

// Service is the control plane's registry of nodes.
type Service struct {
	st   Store
	reg  registry // the nodes: st, or the Leases
	ca   *CA
	opts Options
	cp   *controlPlane // the control plane's client identity

	mu      sync.Mutex
	lastErr map[string]string // node -> why its latest heartbeat failed
	known   map[string]Node   // every node as of the latest heartbeat round
	clients map[string]nodeRuntime
	wasLost map[string]bool // lost at the latest round
	gone    map[string]bool // lost past the grace period (OnGone called)
	seen    map[string]bool // answered since this service started
	// renewing: a renewal of the node's certificate is under way (zero),
	// or the last one failed then.
	renewing map[string]time.Time

	started time.Time
	stop    chan struct{}
	done    chan struct{}
}

// New loads the node CA (making it on first use), and starts the
// heartbeats.
func New(ctx context.Context, st Store, box Sealer, opts Options) (*Service, error) {
	if opts.HeartbeatEvery <= 0 {
		opts.HeartbeatEvery = DefaultHeartbeatEvery
	}
	if opts.LostAfter <= 0 {
		opts.LostAfter = DefaultLostAfter
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	var ca *CA
	var cp *controlPlane
	var reg registry = st
	var err error
	if opts.Discovery != nil {
		if ca, cp, err = newDiscovered(opts); err != nil {
			return nil, err
		}
		reg = newLeaseRegistry(opts.Discovery, opts.Now)
	} else {
		if ca, err = loadOrMakeCA(ctx, st, box, opts.Now()); err != nil {
			return nil, err
		}
		if cp, err = newControlPlane(ca, ca, opts.Now); err != nil {
			return nil, err
		}
	}
	s := &Service{st: st, reg: reg, ca: ca, opts: opts, cp: cp, lastErr: map[string]string{}, known: map[string]Node{}, clients: map[string]nodeRuntime{},
		wasLost: map[string]bool{}, gone: map[string]bool{}, seen: map[string]bool{}, renewing: map[string]time.Time{},
		started: opts.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go s.watch()
	return s, nil
}

func loadOrMakeCA(ctx context.Context, st Store, box Sealer, now time.Time) (*CA, error) {
	certDER, sealed, err := st.NodeCA(ctx)
	if errors.Is(err, errdefs.ErrNotFound) {
		ca, der, err := newCA(now)
		if err != nil {
			return nil, fmt.Errorf("node CA: %w", err)
		}
		keyDER, err := marshalKey(ca.key)
		if err != nil {
			return nil, err
		}
		// Another control plane on the same store may have made one
		// first: the stored one wins.
		if certDER, sealed, err = st.PutNodeCA(ctx, der, box.Seal(keyDER, []byte(caKeyAD))); err != nil {
			return nil, fmt.Errorf("node CA: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("node CA: %w", err)
	}
	keyDER, err := box.Open(sealed, []byte(caKeyAD))
	if err != nil {
		return nil, fmt.Errorf("node CA key (is this the master key it was sealed with?): %w", err)
	}
	return loadCA(certDER, keyDER)
}

// Close stops the heartbeats.
func (s *Service) Close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	s.cp.close()
}

// CAHash is the node CA's pin.
func (s *Service) CAHash() string { return s.ca.Hash() }

// tokenPrefix starts every join token, so one pasted in the wrong place
// is recognised.
const tokenPrefix = "alj_"

// MintToken makes a join token valid for ttl (0 takes DefaultTokenTTL).
func (s *Service) MintToken(ctx context.Context, ttl time.Duration) (TokenReply, error) {
	if s.opts.Discovery != nil {
		return TokenReply{}, ErrRegistersItself
	}
	if ttl == 0 {
		ttl = DefaultTokenTTL
	}
	if ttl < MinTokenTTL || ttl > MaxTokenTTL {
		return TokenReply{}, invalid("ttl_s", "must be between %d and %d seconds", int(MinTokenTTL.Seconds()), int(MaxTokenTTL.Seconds()))
	}
	id, secret := randomHex(8), randomB64(32)
	now := s.opts.Now()
	t := JoinToken{ID: id, Hash: tokenHash(secret), CreatedAt: now, ExpiresAt: now.Add(ttl)}
	if err := s.st.CreateJoinToken(ctx, t); err != nil {
		return TokenReply{}, err
	}
	return TokenReply{Token: tokenPrefix + id + "." + secret, ExpiresAt: t.ExpiresAt.UTC(), CAHash: s.ca.Hash()}, nil
}

func tokenHash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Join checks a joining node's token and request and, when both hold,
// spends the token, signs its certificate and adds it. A bad request
// leaves the token unspent; a token that does not open (missing,
// malformed, unknown, spent, expired) is errdefs.ErrUnauthenticated, and
// the message says which.
func (s *Service) Join(ctx context.Context, req JoinRequest) (JoinReply, error) {
	if s.opts.Discovery != nil {
		return JoinReply{}, ErrRegistersItself
	}
	// The token first, so that only its holder learns what else is
	// wrong; it is spent only once everything else holds.
	now := s.opts.Now()
	tok, err := s.checkToken(ctx, req.Token, now)
	if err != nil {
		return JoinReply{}, err
	}
	if err := CheckName(req.Name); err != nil {
		return JoinReply{}, err
	}
	if err := checkAddr(req.Addr); err != nil {
		return JoinReply{}, err
	}
	if _, err := parseCSR([]byte(req.CSR)); err != nil {
		return JoinReply{}, err
	}
	if _, err := s.reg.GetNode(ctx, req.Name); err == nil {
		return JoinReply{}, fmt.Errorf("%w: node %s has joined already: remove it first (airlock nodes rm %s)", errdefs.ErrConflict, req.Name, req.Name)
	}
	certPEM, cert, err := s.ca.signNode([]byte(req.CSR), req.Name, now)
	if err != nil {
		return JoinReply{}, err
	}
	n := Node{Name: req.Name, Addr: req.Addr, JoinedAt: now, CertSerial: serialHex(cert), CertExpiresAt: cert.NotAfter}
	if err := s.st.JoinNode(ctx, n, tok.ID, now); err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			return JoinReply{}, fmt.Errorf("%w: join token was spent or expired meanwhile", errdefs.ErrUnauthenticated)
		}
		return JoinReply{}, err
	}
	s.opts.Logger.Info("node joined", "node", n.Name, "addr", n.Addr)
	return JoinReply{Name: n.Name, Certificate: string(certPEM), CA: string(s.ca.PEM())}, nil
}

// checkToken finds the token and says why it does not open, if it does
// not.
func (s *Service) checkToken(ctx context.Context, token string, now time.Time) (JoinToken, error) {
	unauth := func(why string) (JoinToken, error) {
		return JoinToken{}, fmt.Errorf("%w: join token %s", errdefs.ErrUnauthenticated, why)
	}
	if token == "" {
		return unauth("is required (field token)")
	}
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	id, secret, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || id == "" || secret == "" {
		return unauth("is malformed: want " + tokenPrefix + "<id>.<secret>, as airlock nodes token prints it")
	}
	t, err := s.st.JoinToken(ctx, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return unauth("is not known")
	}
	if err != nil {
		return JoinToken{}, err
	}
	if subtle.ConstantTimeCompare(t.Hash, tokenHash(secret)) != 1 {
		return unauth("is not known")
	}
	if t.UsedAt != nil {
		return unauth("was used already (by node " + t.UsedBy + "): mint another with airlock nodes token")
	}
	if !now.Before(t.ExpiresAt) {
		return unauth("expired at " + t.ExpiresAt.UTC().Format(time.RFC3339) + ": mint another with airlock nodes token")
	}
	return t, nil
}

// List returns every node, by name, with its state now.
func (s *Service) List(ctx context.Context) ([]Node, error) {
	list, err := s.reg.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list {
		s.fill(&list[i])
	}
	return list, nil
}

// Get returns the node with the name.
func (s *Service) Get(ctx context.Context, name string) (Node, error) {
	if err := s.checkName(name); err != nil {
		return Node{}, err
	}
	n, err := s.reg.GetNode(ctx, name)
	if err != nil {
		return Node{}, err
	}
	s.fill(&n)
	return n, nil
}

// fill sets the state and last error of n.
func (s *Service) fill(n *Node) {
	n.State = s.state(*n)
	s.mu.Lock()
	n.LastError = s.lastErr[n.Name]
	// A node's Lease says it lives; placement takes it once it has also
	// answered this control plane's status call over mutual TLS. Until
	// then it shows joining, and after that as of the latest heartbeat
	// round, so that ready always means placeable and draining not.
	if n.leaseFor != 0 && n.State != StateLost {
		// Drained too as the latest round saw it: placement's view.
		if k, ok := s.known[n.Name]; ok && s.seen[n.Name] {
			n.State = s.state(k)
		} else {
			n.State = StateJoining
		}
	}
	s.mu.Unlock()
}

func (s *Service) state(n Node) string {
	now := s.opts.Now()
	lostAfter := s.lostAfter(n)
	switch {
	case n.LastHeartbeat == nil && now.Sub(n.JoinedAt) < lostAfter:
		return StateJoining
	case n.LastHeartbeat == nil || now.Sub(*n.LastHeartbeat) >= lostAfter:
		return StateLost
	case n.Drained:
		return StateDraining
	}
	return StateReady
}

// Drain stops new placements on the node (drained) or lets them go on.
func (s *Service) Drain(ctx context.Context, name string, drained bool) (Node, error) {
	if err := s.checkName(name); err != nil {
		return Node{}, err
	}
	if err := s.reg.SetNodeDrained(ctx, name, drained); err != nil {
		return Node{}, err
	}
	// Placement reads the heartbeats' snapshot: it takes this at once.
	s.mu.Lock()
	if n, ok := s.known[name]; ok {
		n.Drained = drained
		s.known[name] = n
	}
	s.mu.Unlock()
	return s.Get(ctx, name)
}

// Remove forgets the node: the control plane stops calling it and takes
// its certificate no more. One that holds sandboxes (as it last said) is
// refused unless force; forced, they fail (OnGone).
func (s *Service) Remove(ctx context.Context, name string, force bool) error {
	n, err := s.Get(ctx, name)
	if err != nil {
		return err
	}
	if s.opts.Discovery != nil && n.State != StateLost {
		return fmt.Errorf("%w: node %s renews its Lease: it runs; it leaves when its pod goes (and its Lease expires)", errdefs.ErrConflict, name)
	}
	if n.Use.Sandboxes > 0 && !force {
		return fmt.Errorf("%w: node %s holds %d sandboxes: drain it and let them end, or force", errdefs.ErrConflict, name, n.Use.Sandboxes)
	}
	if err := s.reg.DeleteNode(ctx, name); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.lastErr, name)
	delete(s.known, name)
	delete(s.clients, name)
	s.mu.Unlock()
	s.cp.forget(name)
	s.opts.Logger.Info("node removed", "node", name, "forced", force)
	// What it held (forced) fails: nothing will reach it again.
	if s.opts.OnGone != nil {
		go s.opts.OnGone(name, "node removed")
	}
	return nil
}

// watch calls every node each HeartbeatEvery until Close.
func (s *Service) watch() {
	defer close(s.done)
	t := time.NewTicker(s.opts.HeartbeatEvery)
	defer t.Stop()
	for {
		s.beat()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// beat asks each node for its status at once, each within a heartbeat's
// interval, and records the answers.
func (s *Service) beat() {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.HeartbeatEvery)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	list, err := s.reg.ListNodes(ctx)
	if err != nil {
		s.opts.Logger.Warn("node heartbeats: list nodes", "err", err)
		return
	}
	known := map[string]Node{}
	for _, n := range list {
		known[n.Name] = n
	}
	var wg sync.WaitGroup
	for _, n := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, leaf, err := s.cp.status(ctx, n)
			if err == nil && (st.Name != n.Name || st.Protocol != Protocol) {
				err = fmt.Errorf("node answered as %q with protocol %d, want %q and %d", st.Name, st.Protocol, n.Name, Protocol)
			}
			now := s.opts.Now()
			if err == nil {
				err = s.reg.UpdateNodeStatus(ctx, n.Name, st, now)
			}
			if err == nil && n.leaseFor == 0 && leaf != nil {
				s.certSeen(ctx, &n, leaf, now)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if err == nil {
				n.Version, n.Capacity, n.Use = st.Version, st.Capacity, st.Use
				// A Lease's node is live while its Lease is: the answer
				// only brings fresher figures.
				if n.leaseFor == 0 {
					n.LastHeartbeat = &now
				}
				s.known[n.Name] = n
				known[n.Name] = n
			}
			if err != nil {
				if s.lastErr[n.Name] == "" {
					s.opts.Logger.Warn("node heartbeat failed", "node", n.Name, "err", err)
				}
				s.lastErr[n.Name] = err.Error()
			} else {
				delete(s.lastErr, n.Name)
			}
		}()
	}
	wg.Wait()
	s.mu.Lock()
	for name, n := range known {
		if k, ok := s.known[name]; ok && k.LastHeartbeat != nil && (n.LastHeartbeat == nil || k.LastHeartbeat.After(*n.LastHeartbeat)) {
			known[name] = k
		}
	}
	s.known = known
	var back, gone []string
	now := s.opts.Now()
	for name, n := range known {
		lost := s.state(n) == StateLost
		since := n.JoinedAt
		if n.LastHeartbeat != nil {
			since = *n.LastHeartbeat
		}
		answered := n.LastHeartbeat != nil && !n.LastHeartbeat.Before(s.started)
		switch {
		case !lost && answered && (s.wasLost[name] || !s.seen[name]):
			// Back after being lost, or heard from for the first time
			// since this control plane started (it may have been down
			// while it did).
			s.seen[name] = true
			back = append(back, name)
			delete(s.gone, name)
		case lost && !s.gone[name] && now.Sub(since) >= s.lostAfter(n)+s.opts.Grace:
			s.gone[name] = true
			gone = append(gone, name)
		}
		s.wasLost[name] = lost
	}
	s.mu.Unlock()
	for _, name := range gone {
		s.opts.Logger.Warn("node lost past the grace period: its sandboxes fail", "node", name, "grace", s.opts.Grace)
		if s.opts.OnGone != nil {
			go s.opts.OnGone(name, "node lost")
		}
	}
	for _, name := range back {
		s.opts.Logger.Info("node answers", "node", name)
		if s.opts.OnBack != nil {
			go s.opts.OnBack(name)
		}
	}
}

// certSeen records the certificate a joined node answered with, when it
// is a renewal the record lacks (the control plane stopped between
// handing it over and recording it), and renews the node's certificate
// once a third of its life is left.
func (s *Service) certSeen(ctx context.Context, n *Node, leaf *x509.Certificate, now time.Time) {
	if serial := serialHex(leaf); serial != n.CertSerial && leaf.NotAfter.After(n.CertExpiresAt) {
		// The TLS check took it: the newest certificate for the name. (A
		// connection made before a renewal still shows the one before.)
		if err := s.st.SetNodeCert(ctx, n.Name, serial, leaf.NotAfter); err != nil {
			s.opts.Logger.Warn("node certificate: record the renewed one", "node", n.Name, "err", err)
			return
		}
		n.CertSerial, n.CertExpiresAt = serial, leaf.NotAfter
	}
	if n.CertExpiresAt.Sub(now) > nodeLifetime/3 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if last, ok := s.renewing[n.Name]; ok && (last.IsZero() || now.Sub(last) < renewRetry) {
		return // under way, or failed a moment ago
	}
	s.renewing[n.Name] = time.Time{}
	node := *n // the heartbeat goes on with n
	go func() {
		err := s.renewCert(node)
		s.mu.Lock()
		if err != nil {
			s.renewing[node.Name] = s.opts.Now()
		} else {
			delete(s.renewing, node.Name)
		}
		s.mu.Unlock()
		if err != nil {
			s.opts.Logger.Warn("node certificate: renew", "node", node.Name, "expires", node.CertExpiresAt, "err", err)
		}
	}()
}

// renewRetry is how long after a failed renewal of a node's certificate
// the next is tried.
const renewRetry = 10 * time.Minute

// renewCert has node n make a new key and request, signs it, hands the
// certificate over and records it. A node that got the certificate but
// whose record was not updated is recorded at its next heartbeat.
func (s *Service) renewCert(n Node) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var req RenewReply
	if _, err := s.cp.call(ctx, n, http.MethodPost, RenewPath, struct{}{}, &req); err != nil {
		return err
	}
	certPEM, cert, err := s.ca.signNode([]byte(req.CSR), n.Name, s.opts.Now())
	if err != nil {
		return err
	}
	var got CertificateReply
	if _, err := s.cp.call(ctx, n, http.MethodPut, CertificatePath, CertificateRequest{Certificate: string(certPEM)}, &got); err != nil {
		return err
	}
	if got.Serial != serialHex(cert) {
		return fmt.Errorf("the node serves certificate %s, not the renewed %s", got.Serial, serialHex(cert))
	}
	if err := s.st.SetNodeCert(ctx, n.Name, serialHex(cert), cert.NotAfter); err != nil {
		return err
	}
	s.mu.Lock()
	if k, ok := s.known[n.Name]; ok {
		k.CertSerial, k.CertExpiresAt = serialHex(cert), cert.NotAfter
		s.known[n.Name] = k
	}
	s.mu.Unlock()
	s.opts.Logger.Info("node certificate renewed", "node", n.Name, "expires", cert.NotAfter)
	return nil
}

// Lost says whether the named node is lost, and since when, for the
// sandboxes there.
func (s *Service) Lost(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.known[name]
	if !ok || s.state(n) != StateLost {
		return "", false
	}
	if n.LastHeartbeat == nil {
		return "node " + name + " is lost (never heard from)", true
	}
	return "node " + name + " is lost (last heard from " + n.LastHeartbeat.UTC().Format(time.RFC3339) + ")", true
}

// nodeRuntime is a node's runtime client, for the certificate and address
// it was made for.
type nodeRuntime struct {
	serial, addr string
	rt           runtime.Runtime
}

// Placeable returns the nodes that take new sandboxes now: ready, as of
// the latest heartbeats.
func (s *Service) Placeable(ctx context.Context) ([]Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Node
	for _, n := range s.known {
		if s.state(n) == StateReady && (n.leaseFor == 0 || n.protocol == Protocol) {
			out = append(out, n)
		}
	}
	return out, nil
}

// Largest is the most CPUs and the most memory any node has reported, as
// of the latest heartbeats, lost and draining nodes included: what one
// sandbox may ask for at most. ok is false while no node has reported.
func (s *Service) Largest() (cpus int, memoryMB int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.known {
		if n.Capacity.CPUs > 0 {
			cpus, memoryMB, ok = max(cpus, n.Capacity.CPUs), max(memoryMB, n.Capacity.MemoryMB), true
		}
	}
	return cpus, memoryMB, ok
}

// Names returns every joined node's name.
func (s *Service) Names(ctx context.Context) ([]string, error) {
	list, err := s.reg.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(list))
	for i, n := range list {
		names[i] = n.Name
	}
	return names, nil
}

// Runtime returns the runtime of the named node, through the node API.
// A lost node's is an error wrapping runtime.ErrUnavailable that says
// since when.
func (s *Service) Runtime(ctx context.Context, name string) (runtime.Runtime, error) {
	if s.opts.Client == nil {
		return nil, fmt.Errorf("%w: this control plane places no sandboxes on nodes", runtime.ErrUnsupported)
	}
	s.mu.Lock()
	n, ok := s.known[name]
	s.mu.Unlock()
	if !ok {
		var err error
		if n, err = s.reg.GetNode(ctx, name); err != nil {
			return nil, fmt.Errorf("%w: node %s: %v", runtime.ErrUnavailable, name, err)
		}
	}
	if s.state(n) == StateLost {
		since := "never heard from"
		if n.LastHeartbeat != nil {
			since = "last heard from " + n.LastHeartbeat.UTC().Format(time.RFC3339)
		}
		return nil, fmt.Errorf("%w: node %s is lost (%s)", runtime.ErrUnavailable, name, since)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[name]; ok && c.serial == n.CertSerial && c.addr == n.Addr {
		return c.rt, nil
	}
	rt := s.opts.Client(s.cp.client(n), "https://"+n.Addr)
	s.clients[name] = nodeRuntime{serial: n.CertSerial, addr: n.Addr, rt: rt}
	return rt, nil
}

// lostAfter is how long after its last heartbeat (or its Lease's
// renewal) n is lost.
func (s *Service) lostAfter(n Node) time.Duration {
	if n.leaseFor > 0 {
		return n.leaseFor
	}
	return s.opts.LostAfter
}

// checkName checks the name of a node of this service: a Kubernetes
// node's name when nodes register with Leases.
func (s *Service) checkName(name string) error {
	if s.opts.Discovery != nil {
		return CheckClusterName(name)
	}
	return CheckName(name)
}

// CheckName checks a node name: a DNS label of lower-case letters, digits
// and '-'.
func CheckName(name string) error {
	if name == "" || len(name) > maxNodeName || name[0] == '-' || name[len(name)-1] == '-' {
		return invalid("name", "%q must be 1 to %d lower-case letters, digits or '-', not starting or ending with '-'", name, maxNodeName)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return invalid("name", "%q must be 1 to %d lower-case letters, digits or '-', not starting or ending with '-'", name, maxNodeName)
		}
	}
	return nil
}

// checkAddr checks the address a node serves its API on: host:port, the
// host an IP or a name the control plane can resolve, the port 1-65535.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return invalid("addr", "%q must be HOST:PORT", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return invalid("addr", "%q: port must be 1 to 65535", addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return invalid("addr", "%q: a node must give an address the control plane can reach, not %s", addr, host)
	}
	return nil
}

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s %s", errdefs.ErrInvalid, field, fmt.Sprintf(format, args...))
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func randomB64(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
