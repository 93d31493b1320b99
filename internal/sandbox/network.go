package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// MaxNetLogPage bounds one page of a sandbox's egress log.
const MaxNetLogPage = 1000

// compileNetwork validates a requested policy (nil: the default, none) and
// returns its rules and the JSON kept in the record.
func (s *Service) compileNetwork(p *egress.Policy) (*egress.Rules, string, error) {
	pol := egress.Policy{Mode: egress.ModeNone}
	if p != nil {
		pol = *p
	}
	rules, err := egress.Compile(pol)
	if err != nil {
		return nil, "", fmt.Errorf("%w: network: %v", ErrInvalid, err)
	}
	norm := rules.Policy()
	if norm.Mode != egress.ModeNone && s.proxy == nil {
		return nil, "", fmt.Errorf("%w: network: this server runs without the egress proxy", ErrInvalid)
	}
	if norm.Mode != egress.ModeNone {
		// A tenant's entry naming only the host, loopback or a private
		// network is refused here; wider ones are held to public
		// addresses where the proxy dials.
		if err := s.proxy.CheckReach(norm); err != nil {
			return nil, "", fmt.Errorf("%w: network: %v", ErrInvalid, err)
		}
	}
	if norm.Mode == egress.ModeNone && len(norm.Deny) == 0 {
		return rules, "", nil
	}
	b, err := json.Marshal(norm)
	if err != nil {
		return nil, "", fmt.Errorf("encode network policy: %w", err)
	}
	return rules, string(b), nil
}

// recordPolicy decodes a record's policy ("" is none).
func recordPolicy(rec sandboxrec.Sandbox) (egress.Policy, error) {
	p := egress.Policy{Mode: egress.ModeNone}
	if rec.Network == "" {
		return p, nil
	}
	if err := json.Unmarshal([]byte(rec.Network), &p); err != nil {
		return p, fmt.Errorf("sandbox %s: decode network policy: %w", rec.ID, err)
	}
	return p, nil
}

// attach gives a running sandbox its way out: the proxy on its node
// (egress_remote.go), or the control plane's own with listeners inside
// its network namespace, serving under rules.
func (s *Service) attach(ctx context.Context, rec sandboxrec.Sandbox, sb runtime.Sandbox, rules *egress.Rules) error {
	if _, ok := sb.(runtime.Listener); !ok {
		return errNoListener
	}
	ns := &netState{tenant: rec.TenantID, env: egress.Env()}
	var sec *sandboxSecrets
	if rec.Secrets != "" {
		b, err := s.loadBindings(ctx, rec)
		if err != nil {
			return fmt.Errorf("secrets of %s: %w", rec.ID, err)
		}
		sec = &b
		maps.Copy(ns.env, sec.env)
		ns.secrets = sec.names
		ns.scrub = sec.scrubber()
	}
	remote, err := s.attachRemote(ctx, rec, sb, rules, sec)
	if err != nil {
		return fmt.Errorf("egress proxy for %s: %w", rec.ID, err)
	}
	if remote != nil {
		ns.att = remote
	} else if ns.att, err = s.attachLocal(ctx, rec, sb, rules, sec); err != nil {
		return err
	}
	if sec != nil {
		if err := installCA(ctx, sb, sec.ca.CertPEM()); err != nil {
			ns.att.Close()
			return fmt.Errorf("secrets of %s: %w", rec.ID, err)
		}
	}
	s.netMu.Lock()
	old := s.attached[rec.ID]
	s.attached[rec.ID] = ns
	s.netMu.Unlock()
	if old != nil && old.att != ns.att {
		old.att.Leave()
	}
	if remote != nil {
		s.followEgress(remote.node)
	}
	return nil
}

// attachLocal serves the sandbox's traffic from the control plane's own
// proxy, through listeners inside its network namespace.
func (s *Service) attachLocal(ctx context.Context, rec sandboxrec.Sandbox, sb runtime.Sandbox, rules *egress.Rules, sec *sandboxSecrets) (egressAtt, error) {
	httpLn, err := s.listenIn(ctx, rec.ID, sb, egress.HTTPPort)
	if err != nil {
		return nil, fmt.Errorf("egress proxy for %s: %w", rec.ID, err)
	}
	socksLn, err := s.listenIn(ctx, rec.ID, sb, egress.SOCKSPort)
	if err != nil {
		httpLn.Close()
		return nil, fmt.Errorf("egress proxy for %s: %w", rec.ID, err)
	}
	att := s.proxy.Attach(rec.ID, rec.TenantID, rules, httpLn, socksLn)
	if b := lifecycleOf(rec).Budget; b != nil {
		att.SetModelGate(s.modelGate(rec.ID, b))
	}
	if sec != nil {
		if err := att.SetSecrets(sec.ca, sec.bindings); err != nil {
			att.Close()
			return nil, fmt.Errorf("secrets of %s: %w", rec.ID, err)
		}
	}
	return localAtt{att}, nil
}

var errNoListener = fmt.Errorf("%w: this runtime cannot listen inside a sandbox (its proxy, its approvals channel)", ErrInvalid)

// listenIn listens on 127.0.0.1:port inside the sandbox, and again each
// time that listener fails unclosed (a node's connection that broke),
// finding the sandbox anew each time.
func (s *Service) listenIn(ctx context.Context, id string, sb runtime.Sandbox, port int) (net.Listener, error) {
	return s.relisten(ctx, id, sb, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
}

// relisten listens on address in sb, and again each time that listener
// fails unclosed, finding the sandbox id anew each time.
func (s *Service) relisten(ctx context.Context, id string, sb runtime.Sandbox, network, address string) (net.Listener, error) {
	l, ok := sb.(runtime.Listener)
	if !ok {
		return nil, errNoListener
	}
	ln, err := l.Listen(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return newRelistener(ln, func(ctx context.Context) (net.Listener, error) {
		sb, err := s.rt.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		l, ok := sb.(runtime.Listener)
		if !ok {
			return nil, errNoListener
		}
		return l.Listen(ctx, network, address)
	}), nil
}

// netState is a running sandbox's attachment to the proxy and what its
// commands get in their environment because of it.
type netState struct {
	att     egressAtt
	tenant  string
	env     map[string]string // proxy variables, placeholders, CA paths
	secrets []string          // names bound at create
	scrub   *audit.Scrubber   // takes their values out of the audit log
}

// detach closes a sandbox's proxy listeners and open connections.
func (s *Service) detach(id string) {
	s.netMu.Lock()
	ns := s.attached[id]
	delete(s.attached, id)
	s.netMu.Unlock()
	if ns != nil {
		if err := ns.att.Close(); err != nil {
			s.log.Warn("close egress proxy", "sandbox", id, "err", err)
		}
	}
}

func (s *Service) netState(id string) *netState {
	s.netMu.Lock()
	defer s.netMu.Unlock()
	return s.attached[id]
}

// reattachNetwork gives a sandbox that survived a restart its proxy back
// (the old listeners died with the old process).
func (s *Service) reattachNetwork(ctx context.Context, rec sandboxrec.Sandbox, sb runtime.Sandbox) error {
	pol, err := recordPolicy(rec)
	if err != nil || pol.Mode == egress.ModeNone || s.proxy == nil {
		return err
	}
	rules, err := egress.Compile(pol)
	if err != nil {
		return fmt.Errorf("sandbox %s: stored network policy: %w", rec.ID, err)
	}
	return s.attach(ctx, rec, sb, rules)
}

// GetNetwork returns a sandbox's network policy.
func (s *Service) GetNetwork(ctx context.Context, c Caller, id string) (egress.Policy, error) {
	rec, err := s.resolve(ctx, c, id)
	if err != nil {
		return egress.Policy{}, err
	}
	return recordPolicy(rec)
}

// SetNetwork replaces a running sandbox's policy. New connections and
// requests follow it at once; tunnels already open stay open. A sandbox
// that had no proxy gets one (and its next commands the proxy variables).
func (s *Service) SetNetwork(ctx context.Context, c Caller, id string, p egress.Policy) (egress.Policy, error) {
	rules, enc, err := s.compileNetwork(&p)
	if err != nil {
		return egress.Policy{}, err
	}
	unlock := s.locks.lock(id)
	defer unlock()
	rec, sb, err := s.live(ctx, c, id)
	if err != nil {
		return egress.Policy{}, err
	}
	if ns := s.netState(id); ns != nil {
		if err := ns.att.SetRules(ctx, rules); err != nil {
			return egress.Policy{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	} else if rules.Policy().Mode != egress.ModeNone {
		if err := s.attach(ctx, rec, sb, rules); err != nil {
			if errors.Is(err, ErrInvalid) {
				return egress.Policy{}, err
			}
			return egress.Policy{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	rec.Network = enc
	if err := s.st.UpdateSandbox(ctx, rec); err != nil {
		return egress.Policy{}, fmt.Errorf("save sandbox %s: %w", id, err)
	}
	return rules.Policy(), nil
}

// NetworkLog returns up to limit entries of a sandbox's egress log with a
// seq above after. The log outlives the sandbox.
func (s *Service) NetworkLog(ctx context.Context, c Caller, id string, after int64, limit int) ([]egress.Event, error) {
	if limit <= 0 || limit > MaxNetLogPage {
		limit = MaxNetLogPage
	}
	if _, err := s.resolve(ctx, c, id); err != nil {
		return nil, err
	}
	s.netlog.Flush() // what happened before this call is in the answer
	recs, err := s.st.NetEvents(ctx, id, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]egress.Event, 0, len(recs))
	for _, r := range recs {
		var e egress.Event
		if err := json.Unmarshal(r.Data, &e); err != nil {
			return nil, fmt.Errorf("sandbox %s: decode egress event %d: %w", id, r.ID, err)
		}
		e.Seq = r.ID
		out = append(out, e)
	}
	return out, nil
}

// execEnv adds the proxy variables to a command's environment when the
// sandbox has a proxy; the request's own variables win.
func (s *Service) execEnv(id string, env map[string]string) map[string]string {
	ns := s.netState(id)
	if ns == nil {
		return env
	}
	out := maps.Clone(ns.env)
	maps.Copy(out, env)
	return out
}

// ListenIn listens on address inside the caller's sandbox id (its network
// namespace: an abstract unix socket there is reachable only from inside
// it), and again whenever that listener fails unclosed (a node's
// connection that broke): a host process serves what the sandbox's
// processes connect to there (a task's approvals channel).
func (s *Service) ListenIn(ctx context.Context, c Caller, id, network, address string) (net.Listener, error) {
	_, sb, err := s.live(ctx, c, id)
	if err != nil {
		return nil, err
	}
	return s.relisten(ctx, id, sb, network, address)
}
