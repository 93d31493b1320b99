package egress

import (
	"fmt"
	"net/netip"
)

// A whole-internet entry ("0.0.0.0/0", "::/0") admits a name no name rule
// allows (Decision.PublicOnly), on condition of what the name resolves to.
// The proxy resolves the name once, checks every address here, and dials
// only the addresses it checked, each checked again on its socket
// (Dialer.Control): the resolver, which the sandbox's adversary may run,
// gets no second answer to slip a private address in (DNS rebinding).

// notePublic ends the refusal of a name a whole-internet entry admitted
// but one of whose addresses is not public.
const notePublic = "a whole-internet allow entry admits a name only if every address it resolves to is public"

// admitPublic vets the addresses a name resolved to for a whole-internet
// decision, before any is dialed, and returns the ones to dial: those of a
// family a whole-internet entry covers at port. Every address must pass
// checkPublic, also one of a family that will not be dialed: a name that
// mixes a public address with a private one is an internal name (split
// horizon, or an attacker's resolver hoping the client picks the private
// one), not a piece of the internet.
func (p *Proxy) admitPublic(r *Rules, name string, addrs []netip.Addr, port int) ([]netip.Addr, error) {
	var dial []netip.Addr
	var uncovered netip.Addr
	for _, a := range addrs {
		a = a.WithZone("").Unmap()
		if err := p.checkPublic(r, name, a, port); err != nil {
			return nil, err
		}
		if _, ok := r.wholeInternet(a, port); ok {
			dial = append(dial, a)
		} else if !uncovered.IsValid() {
			uncovered = a
		}
	}
	if len(dial) == 0 && uncovered.IsValid() {
		return nil, uncoveredFamily(r, name, uncovered, port)
	}
	return dial, nil
}

// checkPublic refuses ip for a name a whole-internet entry admitted: a
// deny rule listing it wins, and an address must be public as the dial
// check reads it with no rule at all (reach with nil rules: not in a
// forbidden range, not the host's own). The operator's openings
// (AllowPrivate) do not make an address public: an opened address still
// needs an IP rule listing it, and IP rules do not match names.
func (p *Proxy) checkPublic(r *Rules, host string, ip netip.Addr, port int) error {
	ip = ip.WithZone("").Unmap()
	if d, ok := r.deniesIP(ip, port); ok {
		return &deniedAddrError{host: host, addr: ip, why: "denied", rule: d.entry,
			note: fmt.Sprintf("denied by rule %q", d.entry)}
	}
	if ok, why, ruleOpens := p.reach(nil, ip, port); !ok {
		return &deniedAddrError{host: host, addr: ip, why: why, operatorOnly: !ruleOpens, note: notePublic}
	}
	return nil
}

// checkInternet is the check on the socket being connected for a
// whole-internet decision: checkPublic, and a whole-internet entry of
// ip's family covers the port.
func (p *Proxy) checkInternet(r *Rules, host string, ip netip.Addr, port int) error {
	if err := p.checkPublic(r, host, ip, port); err != nil {
		return err
	}
	if _, ok := r.wholeInternet(ip, port); !ok {
		return uncoveredFamily(r, host, ip, port)
	}
	return nil
}

func uncoveredFamily(r *Rules, host string, ip netip.Addr, port int) error {
	fam, whole := "IPv4", "0.0.0.0/0"
	if ip.Unmap().Is6() {
		fam, whole = "IPv6", "::/0"
	}
	return &deniedAddrError{host: host, addr: ip, why: fam,
		note: fmt.Sprintf("no allow entry lists the whole %s internet (%q) for port %d", fam, whole, port)}
}
