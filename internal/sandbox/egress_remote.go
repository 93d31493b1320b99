package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egresshost"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// A sandbox on a node has its egress proxy on that node
// (internal/egresshost): its traffic leaves from the host it runs on. The
// control plane puts the proxy's policy, secrets and budget gate there,
// follows the node's journal of egress events into the network log,
// the audit log and the meter as if its own proxy had logged them, and
// answers the questions the node's proxy puts to a person. A node that
// runs no proxies (older) gets the control plane's own, through
// listeners carried over the node API.

// egressAtt is a sandbox's attachment to its proxy: the control plane's
// own (localAtt) or its node's (remoteAtt).
type egressAtt interface {
	SetRules(ctx context.Context, r *egress.Rules) error
	SetSecrets(ctx context.Context, ca *egress.CA, bindings []egress.Binding) error
	// Close is the sandbox's end: its proxy goes.
	Close() error
	// Leave is the control plane's: a proxy on a node serves on.
	Leave()
}

// localAtt is the control plane's own proxy for a sandbox.
type localAtt struct{ *egress.Sandbox }

func (a localAtt) SetRules(_ context.Context, r *egress.Rules) error {
	a.Sandbox.SetRules(r)
	return nil
}
func (a localAtt) SetSecrets(_ context.Context, ca *egress.CA, b []egress.Binding) error {
	return a.Sandbox.SetSecrets(ca, b)
}
func (a localAtt) Leave() { a.Sandbox.Close() }

// egressSandbox is a sandbox whose node runs its proxy (noderpc).
type egressSandbox interface {
	PutEgress(ctx context.Context, spec egresshost.Spec) (egresshost.PutReply, error)
}

// egressNode is a node that runs its sandboxes' proxies (noderpc).
type egressNode interface {
	EgressEvents(ctx context.Context, after, askVersion int64, boot string, wait time.Duration) (egresshost.Batch, error)
	AnswerEgressAsk(ctx context.Context, id string, a egresshost.Answer) error
}

// remoteAtt is a sandbox's proxy on its node.
type remoteAtt struct {
	s    *Service
	id   string
	node string
	gate func() error // the budget's, nil for none

	mu   sync.Mutex // held across a put, so puts reach the node in order
	spec egresshost.Spec
	boot string // the node process that holds it
}

// put sends the spec to the node (the sandbox found anew: its node's
// client may have changed).
func (a *remoteAtt) put(ctx context.Context) error {
	sb, err := runtime.GetLazy(ctx, a.s.rt, a.id)
	if err != nil {
		return err
	}
	es, ok := sb.(egressSandbox)
	if !ok {
		return fmt.Errorf("%w: sandbox %s's node runs no egress proxy", runtime.ErrUnsupported, a.id)
	}
	r, err := es.PutEgress(ctx, a.spec)
	if err == nil {
		a.boot = r.Boot
	}
	return err
}

func (a *remoteAtt) update(ctx context.Context, f func(*egresshost.Spec)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(&a.spec)
	return a.put(ctx)
}

func (a *remoteAtt) SetRules(ctx context.Context, r *egress.Rules) error {
	return a.update(ctx, func(s *egresshost.Spec) { s.Policy = r.Policy() })
}

func (a *remoteAtt) SetSecrets(ctx context.Context, ca *egress.CA, b []egress.Binding) error {
	return a.update(ctx, func(s *egresshost.Spec) { s.Secrets = egresshost.NewSecrets(ca, b) })
}

// Close does nothing: the node closes a sandbox's proxy as it destroys
// the sandbox, and a node that cannot be reached destroys it when it
// returns.
func (a *remoteAtt) Close() error { return nil }
func (a *remoteAtt) Leave()       {}

// attachRemote puts sandbox rec's proxy on its node. It returns nil and
// no error when the node runs none: the caller attaches the control
// plane's own.
func (s *Service) attachRemote(ctx context.Context, rec sandboxrec.Sandbox, sb runtime.Sandbox, rules *egress.Rules, sec *sandboxSecrets) (*remoteAtt, error) {
	if _, ok := sb.(egressSandbox); !ok {
		return nil, nil
	}
	node := runtime.NodeOf(s.rt, rec.ID) // a create's record has no node yet
	if node == runtime.LocalNode && rec.Node != "" {
		node = rec.Node
	}
	a := &remoteAtt{s: s, id: rec.ID, node: node, spec: egresshost.Spec{Tenant: rec.TenantID, Policy: rules.Policy()}}
	if b := lifecycleOf(rec).Budget; b != nil {
		a.spec.Budget = true
		a.gate = s.modelGate(rec.ID, b)
		if err := a.gate(); err != nil {
			a.spec.Gate = err.Error()
		}
	}
	if sec != nil {
		a.spec.Secrets = egresshost.NewSecrets(sec.ca, sec.bindings)
	}
	a.mu.Lock()
	err := a.put(ctx)
	a.mu.Unlock()
	if errors.Is(err, runtime.ErrUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// followEgress follows node's egress journal (once per node), until no
// sandbox there is attached and nothing is left to read. The caller has
// put the attachment in s.attached first.
func (s *Service) followEgress(node string) {
	s.netMu.Lock()
	defer s.netMu.Unlock()
	if s.following[node] {
		return
	}
	s.following[node] = true
	go s.egressFollower(node)
}

// unfollow ends node's follower unless a sandbox there is attached.
func (s *Service) unfollow(node string) bool {
	s.netMu.Lock()
	defer s.netMu.Unlock()
	for _, ns := range s.attached {
		if a, ok := ns.att.(*remoteAtt); ok && a.node == node {
			return false
		}
	}
	delete(s.following, node)
	return true
}

// egressFollower reads node's egress events as they come, hands each on
// as the control plane's own proxy's are, and acknowledges them once
// stored; it answers the node's questions and keeps its attachments put.
func (s *Service) egressFollower(node string) {
	ctx := s.life
	var after, askVer int64
	var boot string // the node process last heard from
	asks := map[string]context.CancelFunc{}
	defer func() {
		for _, cancel := range asks {
			cancel()
		}
	}()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		en, err := s.egressNodeOf(ctx, node)
		var b egresshost.Batch
		if err == nil {
			b, err = en.EgressEvents(ctx, after, askVer, boot, 15*time.Second)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if s.unfollow(node) {
				return // its sandboxes are gone, or it was removed
			}
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		for _, r := range b.Events {
			s.egressEvent(r.Event)
			after = r.Seq // in order; lower after a node's journal began again
		}
		if len(b.Events) > 0 {
			// Stored before the next call acknowledges them.
			s.netlog.Sync()
			s.Durable()
		}
		s.answerAsks(ctx, en, b.Asks, asks)
		askVer, boot = b.AskVersion, b.Boot
		s.keepPut(ctx, node, b.Boot)
		if len(b.Events) == 0 && len(b.Asks) == 0 && s.unfollow(node) {
			return
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// egressNodeOf is node's runtime as an egressNode.
func (s *Service) egressNodeOf(ctx context.Context, node string) (egressNode, error) {
	rt := s.rt
	if nr, ok := s.rt.(runtime.NodeRouter); ok {
		var err error
		if rt, err = nr.On(ctx, node); err != nil {
			return nil, err
		}
	}
	en, ok := rt.(egressNode)
	if !ok {
		return nil, fmt.Errorf("%w: node %s runs no egress proxy", runtime.ErrUnsupported, node)
	}
	return en, nil
}

// answerAsks asks a person each question open on the node not asked yet,
// answers the node, and gives up those the node no longer asks.
func (s *Service) answerAsks(ctx context.Context, en egressNode, open []egresshost.Ask, asking map[string]context.CancelFunc) {
	seen := make(map[string]bool, len(open))
	for _, a := range open {
		seen[a.ID] = true
		if asking[a.ID] != nil {
			continue
		}
		actx, cancel := context.WithDeadline(ctx, a.Request.Deadline)
		asking[a.ID] = cancel
		go func() {
			defer cancel()
			ans := egress.AskAnswer{Reason: "no approvals service on this control plane"}
			if ask := s.askFunc(); ask != nil {
				var err error
				if ans, err = ask(actx, a.Request); err != nil {
					if actx.Err() != nil {
						return // the node gave up, or the deadline passed: it refuses on its own
					}
					ans = egress.AskAnswer{Reason: err.Error()}
				}
			}
			cctx, ccancel := context.WithTimeout(context.WithoutCancel(actx), 10*time.Second)
			defer ccancel()
			if err := en.AnswerEgressAsk(cctx, a.ID, egresshost.Answer{Allow: ans.Allow, Reason: ans.Reason}); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				s.log.Warn("answer a node's egress question", "sandbox", a.Request.SandboxID, "err", err)
			}
		}()
	}
	for id, cancel := range asking {
		if !seen[id] {
			cancel()
			delete(asking, id)
		}
	}
}

func (s *Service) askFunc() func(context.Context, egress.AskRequest) (egress.AskAnswer, error) {
	if s.opts.Egress == nil {
		return nil
	}
	return s.opts.Egress.Ask
}

// keepPut puts again every attachment on node that its process boot does
// not hold (the node restarted), and each whose budget gate says
// otherwise than the node was last told.
func (s *Service) keepPut(ctx context.Context, node, boot string) {
	s.netMu.Lock()
	var atts []*remoteAtt
	for _, ns := range s.attached {
		if a, ok := ns.att.(*remoteAtt); ok && a.node == node {
			atts = append(atts, a)
		}
	}
	s.netMu.Unlock()
	for _, a := range atts {
		a.mu.Lock()
		gate := ""
		if a.gate != nil {
			if err := a.gate(); err != nil {
				gate = err.Error()
			}
		}
		var err error
		if a.boot != boot || a.spec.Gate != gate {
			a.spec.Gate = gate
			err = a.put(ctx)
		}
		a.mu.Unlock()
		if err != nil && ctx.Err() == nil && !errors.Is(err, runtime.ErrNotFound) {
			s.log.Warn("put a sandbox's egress proxy on its node", "sandbox", a.id, "node", node, "err", err)
		}
	}
}

// egressEvent takes an event a proxy logged, the control plane's own or a
// node's: into the network log, the audit log and the meter.
func (s *Service) egressEvent(e egress.Event) {
	s.netlog.Add(e)
	switch e.Kind {
	case egress.KindModelUsage, egress.KindModelBudget:
		s.meterModel(e)
	default:
		s.recordNet(e)
		s.meterEgress(e)
	}
	if s.egressNext != nil {
		s.egressNext(e)
	}
}
