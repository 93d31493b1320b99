package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Bounds of Policy.AskTimeoutS: a minute by default, so that an agent
// that asked is not left hanging longer than a person takes to notice;
// an hour at most, since the connection stays open all along.
const (
	defaultAskTimeoutS = 60
	maxAskTimeoutS     = 3600
)

// Ask is a policy's "ask": true (All: every target the allow list does
// not admit), false, or a list of patterns in the allow list's syntax
// (Patterns). Its zero value asks about nothing.
type Ask struct {
	All      bool
	Patterns []string
}

// IsZero reports whether a asks about nothing; such a policy leaves
// "ask" out of its JSON.
func (a Ask) IsZero() bool { return !a.All && len(a.Patterns) == 0 }

// MarshalJSON writes true, false or the list of patterns.
func (a Ask) MarshalJSON() ([]byte, error) {
	switch {
	case a.All:
		return []byte("true"), nil
	case len(a.Patterns) == 0:
		return []byte("false"), nil
	}
	return json.Marshal(a.Patterns)
}

var errAskJSON = errors.New(`network.ask: want true, false or a list of host patterns such as ["*.github.com"]`)

// UnmarshalJSON reads true, false, null (no change, as encoding/json
// does for other types) or a list of strings; anything else is an error
// naming the field. An empty list asks about nothing.
func (a *Ask) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch string(b) {
	case "null":
		return nil
	case "true", "false":
		*a = Ask{All: string(b) == "true"}
		return nil
	}
	if len(b) == 0 || b[0] != '[' {
		return errAskJSON
	}
	var ps []string
	if err := json.Unmarshal(b, &ps); err != nil {
		return fmt.Errorf("%w: %v", errAskJSON, err)
	}
	*a = Ask{Patterns: cloneEntries(ps)}
	return nil
}

func (a Ask) clone() Ask { return Ask{All: a.All, Patterns: cloneEntries(a.Patterns)} }

// compileAsk checks a policy's ask and its timeout, and returns the ask
// rules and the timeout to keep (the default filled in when the policy
// asks, as given when not).
func compileAsk(mode Mode, a Ask, timeoutS int64) ([]rule, int64, error) {
	if timeoutS < 0 || timeoutS > maxAskTimeoutS {
		return nil, 0, fmt.Errorf("network.ask_timeout_s %d: want seconds from 1 to %d (0 or absent: %d)",
			timeoutS, maxAskTimeoutS, defaultAskTimeoutS)
	}
	if a.IsZero() {
		return nil, timeoutS, nil
	}
	const noNetwork = `network mode "none" has no network to ask about; set mode "allowlist" (an empty allow list with "ask": true asks about every target)`
	switch {
	case mode == ModeNone && a.All:
		return nil, 0, errors.New("network.ask: " + noNetwork)
	case mode == ModeNone:
		return nil, 0, &PatternError{List: "ask", Index: 0, Entry: a.Patterns[0], Reason: noNetwork}
	case a.All && len(a.Patterns) > 0:
		// Not writable in JSON; a Go caller's list would be dropped
		// silently by the round trip through it.
		return nil, 0, errors.New("network.ask: true already asks about every target; give a list or true, not both")
	}
	rules, err := compileList("ask", a.Patterns)
	if err != nil {
		return nil, 0, err
	}
	if timeoutS == 0 {
		timeoutS = defaultAskTimeoutS
	}
	return rules, timeoutS, nil
}

// AskTimeout is how long the proxy holds a connection the rules ask
// about before refusing it.
func (r *Rules) AskTimeout() time.Duration {
	if r == nil || r.policy.AskTimeoutS == 0 {
		return defaultAskTimeoutS * time.Second
	}
	return time.Duration(r.policy.AskTimeoutS) * time.Second
}

// matchAsk is Match's last step, for a target neither denied nor
// allowed: whether the rules put it to a person.
func (r *Rules) matchAsk(name string, ip netip.Addr, port int, target string) (Decision, bool) {
	if r.policy.Ask.All {
		return Decision{Ask: true, List: "ask",
			Reason: fmt.Sprintf(`no allow rule matches %s; "ask": true holds it for a person`, target)}, true
	}
	if a, ok := first(r.ask, name, ip, port, false); ok {
		return Decision{Ask: true, List: "ask", Rule: a.entry,
			Reason: fmt.Sprintf("no allow rule matches %s; ask rule %q holds it for a person", target, a.entry)}, true
	}
	return Decision{}, false
}

// admitting returns r with one more allow rule, first, listing exactly
// t: what a person's approval makes of a target r asked about, so that
// the dial checks treat it as the allow list would (AllowsIP then counts
// an IP literal the operator opened as listed; deny entries still win).
func (r *Rules) admitting(t target) *Rules {
	a := rule{entry: t.String(), kind: ruleName, name: t.name, port: t.port}
	if t.ip.IsValid() {
		a.kind, a.name, a.prefix = ruleIP, "", netip.PrefixFrom(t.ip, t.ip.BitLen())
	}
	c := *r
	c.allow = append([]rule{a}, r.allow...)
	return &c
}
