package egress

import (
	"fmt"
	"slices"
)

// Mode says whether a sandbox has a network at all.
type Mode string

const (
	ModeNone      Mode = "none" // default: no network at all
	ModeAllowlist Mode = "allowlist"
)

const (
	maxEntries  = 256
	maxEntryLen = 300
)

// Policy is a sandbox's network policy as the API takes and returns it.
type Policy struct {
	Mode  Mode     `json:"mode"`
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// Ask holds a target the allow list does not admit, and no deny entry
	// lists, for a person's decision (Config.Ask) instead of refusing it.
	Ask Ask `json:"ask,omitzero"`
	// AskTimeoutS bounds that wait in seconds (1..3600; 0: 60).
	AskTimeoutS int64 `json:"ask_timeout_s,omitempty"`
}

// PatternError points at the bad entry of a policy: List is "allow",
// "deny" or "ask", Index its position in that list.
type PatternError struct {
	List   string
	Index  int
	Entry  string
	Reason string
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("network.%s[%d] %s: %s", e.List, e.Index, quoteShort(e.Entry), e.Reason)
}

// Rules is a compiled Policy. It is immutable and safe for concurrent use.
// A nil *Rules denies everything, like mode none.
type Rules struct {
	policy Policy
	allow  []rule
	deny   []rule
	ask    []rule // with policy.Ask.All, every target is asked about
}

// Compile validates p and returns its compiled rules.
//
// An empty mode means none. Mode none allows nothing, so allow entries with
// it are an error; deny entries are checked and kept, so that switching the
// mode later needs no other change. An unknown mode is an error. Each list
// holds at most 256 entries of at most 300 bytes each.
//
// Entries of both lists share one syntax:
//
//	pypi.org                 that name only
//	*.pythonhosted.org       any name below pythonhosted.org, not the apex
//	api.openai.com:443       one port (1..65535)
//	203.0.113.7              an IP address, in canonical form
//	203.0.113.0/24           a CIDR block, host bits zero
//	2001:db8::/32            IPv6 likewise
//	[2001:db8::1]:443        an IPv6 address or block with a port
//	203.0.113.7/32:8080      an IPv4 address or block with a port
//
// Names are case-insensitive and may end in a dot. Without a port an allow
// entry covers ports 80 and 443 only, while a deny entry covers every port:
// a deny is meant to be broad, and "deny evil.com" that left port 8443 open
// would surprise the operator who wrote it. Name entries match names only
// and IP entries match addresses only, with one exception: the
// whole-internet entries "0.0.0.0/0" and "::/0" (with or without a port)
// also admit a name no name entry allows, if every address the proxy
// resolves it to is public and no deny entry lists one; the proxy then
// dials those of the families such entries cover (Decision.PublicOnly).
// A narrower block ("203.0.113.0/24", even "0.0.0.0/1") never admits a
// name: only an entry holding all of a family can take whatever a
// resolver answers.
//
// Ask entries share the syntax and, like allow entries, cover ports 80
// and 443 when they name none; "ask": true asks about every target on
// any port. Asking is for mode allowlist only: mode none gives the
// sandbox no proxy to hold a connection in. A deny entry wins over ask
// (a denied target is never put to a person), and allow over both.
//
// Errors about an entry are *PatternError; an error about the mode or
// the ask timeout is a plain error.
func Compile(p Policy) (*Rules, error) {
	mode := p.Mode
	switch mode {
	case "":
		mode = ModeNone
	case ModeNone, ModeAllowlist:
	default:
		return nil, fmt.Errorf(`network.mode %s: unknown mode, want "none" or "allowlist"`, quoteShort(string(mode)))
	}
	if mode == ModeNone && len(p.Allow) > 0 {
		return nil, &PatternError{List: "allow", Index: 0, Entry: p.Allow[0],
			Reason: `network mode "none" allows nothing; set mode "allowlist" to use allow entries`}
	}
	allow, err := compileList("allow", p.Allow)
	if err != nil {
		return nil, err
	}
	deny, err := compileList("deny", p.Deny)
	if err != nil {
		return nil, err
	}
	ask, timeout, err := compileAsk(mode, p.Ask, p.AskTimeoutS)
	if err != nil {
		return nil, err
	}
	return &Rules{
		policy: Policy{Mode: mode, Allow: cloneEntries(p.Allow), Deny: cloneEntries(p.Deny),
			Ask: p.Ask.clone(), AskTimeoutS: timeout},
		allow: allow,
		deny:  deny,
		ask:   ask,
	}, nil
}

func compileList(list string, entries []string) ([]rule, error) {
	if len(entries) > maxEntries {
		return nil, &PatternError{List: list, Index: maxEntries, Entry: entries[maxEntries],
			Reason: fmt.Sprintf("more than %d entries", maxEntries)}
	}
	rules := make([]rule, 0, len(entries))
	for i, e := range entries {
		r, reason := parseEntry(e)
		if reason != "" {
			return nil, &PatternError{List: list, Index: i, Entry: e, Reason: reason}
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// Policy returns the policy the rules were compiled from, normalized: the
// mode filled in, the entries as given, empty lists as nil, and the ask
// timeout's default filled in when the policy asks.
func (r *Rules) Policy() Policy {
	if r == nil {
		return Policy{Mode: ModeNone}
	}
	return Policy{Mode: r.policy.Mode, Allow: cloneEntries(r.policy.Allow), Deny: cloneEntries(r.policy.Deny),
		Ask: r.policy.Ask.clone(), AskTimeoutS: r.policy.AskTimeoutS}
}

func cloneEntries(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
