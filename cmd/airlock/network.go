package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/runtime"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// networkFlags are --allow and --deny: with either, the sandbox gets the
// egress proxy with that allow-list; with neither, no network at all.
type networkFlags struct{ allow, deny, secrets listFlag }

func (n *networkFlags) register(fs *flag.FlagSet) {
	fs.Var(&n.allow, "allow", "let the sandbox reach this host, *.domain, host:port or CIDR through the egress proxy (repeatable)")
	fs.Var(&n.deny, "deny", "never let it reach this one, even if allowed (repeatable)")
	fs.Var(&n.secrets, "secret", "bind this secret: $NAME holds a placeholder the proxy swaps for the value (repeatable; needs a server)")
}

// policy is the flags' policy: nil (none) without --allow or --deny. It is
// checked here, so a bad entry fails before anything is created.
func (n *networkFlags) policy() (*egress.Policy, error) {
	if len(n.allow) == 0 && len(n.deny) == 0 {
		return nil, nil
	}
	p := egress.Policy{Mode: egress.ModeAllowlist, Allow: n.allow, Deny: n.deny}
	if _, err := egress.Compile(p); err != nil {
		return nil, fmt.Errorf("--allow/--deny: %w", err)
	}
	return &p, nil
}

func (n *networkFlags) clientPolicy() (*client.NetworkPolicy, error) {
	p, err := n.policy()
	if p == nil || err != nil {
		return nil, err
	}
	return &client.NetworkPolicy{Mode: string(p.Mode), Allow: p.Allow, Deny: p.Deny}, nil
}

// embeddedEgress serves an embedded sandbox's egress proxy from this
// process and reports each denial on stderr as it happens. It returns the
// proxy variables for the command and a func that stops the proxy.
func embeddedEgress(ctx context.Context, sb runtime.Sandbox, id string, p egress.Policy) (map[string]string, func(), error) {
	rules, err := egress.Compile(p)
	if err != nil {
		return nil, nil, err
	}
	l, ok := sb.(runtime.Listener)
	if !ok {
		return nil, nil, fmt.Errorf("this runtime cannot give sandboxes network")
	}
	httpLn, err := l.Listen(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", egress.HTTPPort))
	if err != nil {
		return nil, nil, err
	}
	socksLn, err := l.Listen(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", egress.SOCKSPort))
	if err != nil {
		httpLn.Close()
		return nil, nil, err
	}
	// The person running this is the operator of this proxy: an address
	// their own --allow lists is theirs to open (a server's tenants cannot).
	px := egress.New(egress.Config{OwnRules: true, AllowHint: func(_, target string) string {
		return fmt.Sprintf("run again with --allow %s", target)
	}, OnEvent: func(e egress.Event) {
		if line := egressNotice(e.Protocol, e.Host, e.Port, e.Decision, e.Reason, e.UpstreamError); line != "" {
			fmt.Fprintln(os.Stderr, line)
		}
	}})
	att := px.Attach(id, "", rules, httpLn, socksLn)
	return egress.Env(), func() { att.Close() }, nil
}

// printDenials reports on stderr what a server's proxy refused a sandbox.
func printDenials(ctx context.Context, c *client.Client, id string) {
	evs, err := c.NetworkLog(ctx, id, 0, 0)
	if err != nil {
		return
	}
	for _, e := range evs {
		if line := egressNotice(e.Protocol, e.Host, e.Port, e.Decision, e.Reason, e.UpstreamError); line != "" {
			fmt.Fprintln(os.Stderr, line)
		}
	}
}

// egressNotice is the line a person sees about one egress event: how to
// allow a denied target, or, when the allow-list let it through and the
// upstream failed, that the fault lies beyond the allow-list. "" for an
// event that went well.
func egressNotice(protocol, host string, port int, decision, reason, upstream string) string {
	target := net.JoinHostPort(host, strconv.Itoa(port))
	switch {
	case decision == egress.Denied:
		return fmt.Sprintf("airlock: egress denied: %s %s: %s (to allow it: --allow %s)", protocol, target, reason, target)
	case upstream != "":
		return fmt.Sprintf("airlock: egress to %s failed upstream: %s (the allow-list allowed it)", target, reason)
	}
	return ""
}
