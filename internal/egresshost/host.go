package egresshost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/runtime"
)

// Host runs the egress proxies of a node's sandboxes.
type Host struct {
	rt    runtime.Runtime
	proxy *egress.Proxy
	j     *journal
	boot  string
	log   *slog.Logger

	mu       sync.Mutex
	atts     map[string]*attachment // sandbox id ->
	asks     map[string]*pendingAsk // ask id ->
	askVer   int64
	changed  chan struct{} // closed and replaced when an event or ask comes
	closed   bool
	putLocks map[string]*sync.Mutex // sandbox id -> its puts, one at a time
	usage    map[string]int64       // sandbox id -> seq of its last model usage event
}

type attachment struct {
	sb   *egress.Sandbox
	spec Spec
	gate *gate
}

// gate is the budget gate's word as the control plane last put it.
type gate struct {
	mu     sync.Mutex
	reason string
	budget bool // Spec.Budget
}

func (g *gate) check() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reason != "" {
		return errors.New(g.reason)
	}
	return nil
}

type pendingAsk struct {
	ask Ask
	ch  chan Answer
}

// New opens the journal in dataDir's node/ and returns a Host whose
// proxies run with cfg (the node's --egress-* flags). The proxy's
// OnEvent, OnOpen and Ask are the Host's own.
func New(dataDir string, cfg egress.Config, rt runtime.Runtime) (*Host, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Host{rt: rt, log: cfg.Logger, boot: newID(), atts: map[string]*attachment{}, asks: map[string]*pendingAsk{},
		changed: make(chan struct{}), putLocks: map[string]*sync.Mutex{}, usage: map[string]int64{}}
	path := journalPath(dataDir)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("egress journal: %w", err)
	}
	j, err := openJournal(path, cfg.Logger, time.Now, h.wake)
	if err != nil {
		return nil, err
	}
	h.j = j
	cfg.OnEvent = h.event
	cfg.OnOpen = j.open
	cfg.Ask = h.ask
	cfg.LogSize = 0
	h.proxy = egress.New(cfg)
	return h, nil
}

// event journals an event of a proxy.
func (h *Host) event(e egress.Event) {
	seq := h.j.add(e)
	if e.Kind == egress.KindModelUsage {
		h.mu.Lock()
		h.usage[e.SandboxID] = seq
		h.mu.Unlock()
	}
}

// budgetWait is BudgetWait, shortened by tests.
var budgetWait = BudgetWait

// modelGate is sandbox id's budget gate: with a budget, it first waits
// until the control plane has counted the sandbox's model calls so far.
func (h *Host) modelGate(id string, g *gate) func() error {
	return func() error {
		g.mu.Lock()
		budget := g.budget
		g.mu.Unlock()
		if budget {
			h.mu.Lock()
			seq := h.usage[id]
			h.mu.Unlock()
			if seq > 0 && !h.j.waitAcked(seq, budgetWait) {
				return errors.New("the budget cannot be checked: the control plane has not counted this sandbox's previous model calls")
			}
		}
		return g.check()
	}
}

// wake tells the waiting events calls that something is new.
func (h *Host) wake() {
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

func (h *Host) putLock(id string) *sync.Mutex {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.putLocks[id]
	if l == nil {
		l = &sync.Mutex{}
		h.putLocks[id] = l
	}
	return l
}

// Put attaches sandbox id's proxy with spec, or replaces what an attached
// one serves with.
func (h *Host) Put(ctx context.Context, id string, spec Spec) (PutReply, error) {
	return PutReply{Boot: h.boot}, h.put(ctx, id, spec)
}

func (h *Host) put(ctx context.Context, id string, spec Spec) error {
	rules, err := egress.Compile(spec.Policy)
	if err != nil {
		return fmt.Errorf("%w: policy: %v", runtime.ErrInvalid, err)
	}
	var ca *egress.CA
	var bindings []egress.Binding
	if spec.Secrets != nil {
		if ca, bindings, err = spec.Secrets.open(); err != nil {
			return fmt.Errorf("%w: secrets: %v", runtime.ErrInvalid, err)
		}
	}
	l := h.putLock(id)
	l.Lock()
	defer l.Unlock()
	h.mu.Lock()
	att := h.atts[id]
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return fmt.Errorf("%w: the node is shutting down", runtime.ErrUnavailable)
	}
	if att != nil {
		if err := att.sb.SetSecrets(ca, bindings); err != nil {
			return fmt.Errorf("%w: secrets: %v", runtime.ErrInvalid, err)
		}
		att.sb.SetRules(rules)
		att.gate.mu.Lock()
		att.gate.reason, att.gate.budget = spec.Gate, spec.Budget
		att.gate.mu.Unlock()
		h.mu.Lock()
		att.spec = spec
		h.mu.Unlock()
		return nil
	}
	sb, err := h.rt.Get(ctx, id)
	if err != nil {
		return err
	}
	ln, ok := sb.(runtime.Listener)
	if !ok {
		return fmt.Errorf("%w: this node's runtime cannot listen inside a sandbox", runtime.ErrUnsupported)
	}
	httpLn, err := ln.Listen(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(egress.HTTPPort))
	if err != nil {
		return fmt.Errorf("egress proxy for %s: %w", id, err)
	}
	socksLn, err := ln.Listen(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(egress.SOCKSPort))
	if err != nil {
		httpLn.Close()
		return fmt.Errorf("egress proxy for %s: %w", id, err)
	}
	att = &attachment{spec: spec, gate: &gate{reason: spec.Gate, budget: spec.Budget}}
	att.sb = h.proxy.Attach(id, spec.Tenant, rules, httpLn, socksLn)
	att.sb.SetModelGate(h.modelGate(id, att.gate))
	if err := att.sb.SetSecrets(ca, bindings); err != nil {
		att.sb.Close()
		return fmt.Errorf("%w: secrets: %v", runtime.ErrInvalid, err)
	}
	h.mu.Lock()
	h.atts[id] = att
	h.mu.Unlock()
	return nil
}

// Delete closes sandbox id's proxy: its listeners and open connections
// (each logged cut). Deleting one not attached does nothing.
func (h *Host) Delete(id string) error {
	l := h.putLock(id)
	l.Lock()
	defer l.Unlock()
	h.mu.Lock()
	att := h.atts[id]
	delete(h.atts, id)
	delete(h.putLocks, id)
	delete(h.usage, id)
	h.mu.Unlock()
	if att == nil {
		return nil
	}
	return att.sb.Close()
}

// Events acknowledges every event up to after and returns those after it
// and the open questions, waiting up to wait for something new when
// there are no events, the questions are as of askVer and boot names
// this process (a caller that knew another must put its attachments
// again at once).
func (h *Host) Events(ctx context.Context, after, askVer int64, boot string, wait time.Duration) Batch {
	h.j.ack(after)
	t := time.NewTimer(min(max(wait, 0), MaxWait))
	defer t.Stop()
	for {
		h.mu.Lock()
		changed := h.changed
		h.mu.Unlock()
		b := h.batch(after)
		if len(b.Events) > 0 || b.AskVersion != askVer || b.Boot != boot {
			return b
		}
		select {
		case <-changed:
		case <-t.C:
			return b
		case <-ctx.Done():
			return b
		}
	}
}

func (h *Host) batch(after int64) Batch {
	b := Batch{Boot: h.boot, Events: h.j.since(after)}
	h.mu.Lock()
	b.AskVersion = h.askVer
	b.Asks = make([]Ask, 0, len(h.asks))
	for _, pa := range h.asks {
		b.Asks = append(b.Asks, pa.ask)
	}
	h.mu.Unlock()
	slices.SortFunc(b.Asks, func(a, c Ask) int { return a.Request.Deadline.Compare(c.Request.Deadline) })
	if b.Events == nil {
		b.Events = []Record{}
	}
	return b
}

// ask is the proxies' Config.Ask: the question waits here until the
// control plane answers it or ctx ends.
func (h *Host) ask(ctx context.Context, q egress.AskRequest) (egress.AskAnswer, error) {
	pa := &pendingAsk{ask: Ask{ID: newID(), Request: q}, ch: make(chan Answer, 1)}
	h.mu.Lock()
	h.asks[pa.ask.ID] = pa
	h.askVer++
	h.mu.Unlock()
	h.wake()
	defer func() {
		h.mu.Lock()
		delete(h.asks, pa.ask.ID)
		h.askVer++
		h.mu.Unlock()
		h.wake()
	}()
	select {
	case a := <-pa.ch:
		return egress.AskAnswer{Allow: a.Allow, Reason: a.Reason}, nil
	case <-ctx.Done():
		return egress.AskAnswer{}, ctx.Err()
	}
}

// Answer gives the decision on question id to the connections it holds.
func (h *Host) Answer(id string, a Answer) error {
	h.mu.Lock()
	pa := h.asks[id]
	h.mu.Unlock()
	if pa == nil {
		return fmt.Errorf("%w: question %s is no longer asked here (its connections gave up, or the node restarted)", runtime.ErrNotFound, id)
	}
	select {
	case pa.ch <- a:
	default: // answered already
	}
	return nil
}

// Close closes every proxy (their connections logged cut) and the
// journal. The sandboxes keep running; the next process's proxies serve
// them once the control plane attaches them again.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	atts := make([]*attachment, 0, len(h.atts))
	for _, a := range h.atts {
		atts = append(atts, a)
	}
	clear(h.atts)
	h.mu.Unlock()
	for _, a := range atts {
		a.sb.Close()
	}
	return h.j.close()
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
