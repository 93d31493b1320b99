package egress

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Binding is one secret bound to a sandbox: the sandbox holds Placeholder;
// requests over TLS to Hosts get Value instead.
//
// The proxy swaps the placeholder for the value only inside TLS it
// terminates itself with the sandbox's CA (see CA), for requests whose
// CONNECT target, TLS server name and Host header all name a bound host,
// and swaps the value back for the placeholder in everything the host
// answers. So the sandbox never holds the value, and can neither send it
// to another host (exfiltration through an allowed but unbound host) nor
// read it back from a bound host that echoes requests.
//
// What it cannot stop: a bound host that hands the value back transformed
// (base64, JSON escapes, compressed although the proxy asked for identity
// encoding) defeats the scrubbing, and a short value
// can be guessed by sending candidates to an echoing bound host and
// watching which one comes back as the placeholder. Bind long random
// values to hosts that do not echo.
type Binding struct {
	Name        string   // e.g. "OPENAI_API_KEY" (logged; never the value)
	Placeholder string   // what the sandbox holds, e.g. "airlock-ph-<40 hex>"
	Value       []byte   // the real value
	Hosts       []string // "api.openai.com", "*.github.com", optional ":port" (no port: 443)
	Header      string   // optional: if set and the request lacks this header, set it to Format with "{value}" replaced
	Format      string   // contains "{value}"; "" means "{value}"
	Body        bool     // also replace the placeholder in request bodies
}

// ErrInvalidBinding is wrapped by every SetSecrets error about a binding.
var ErrInvalidBinding = errors.New("invalid secret binding")

const (
	maxBindings       = 256
	maxBindingHosts   = 64
	maxNameLen        = 128
	minPlaceholderLen = 16 // a short placeholder would match ordinary text
	maxPlaceholderLen = 256
	maxValueLen       = 16 << 10
	maxFormatLen      = 1024
)

// secretSet is a sandbox's CA and compiled bindings; immutable.
type secretSet struct {
	ca       *CA
	bindings []binding
	scrub    *patterns // every value -> its placeholder, for answers
}

type binding struct {
	Binding
	hosts []rule
}

// SetSecrets replaces the sandbox's CA and bindings; the next request uses
// them. Tunnels intercepted before keep their TLS session but rewrite each
// request with the bindings in force when it arrives. nil or empty
// bindings: no interception at all, ca may then be nil.
func (s *Sandbox) SetSecrets(ca *CA, bindings []Binding) error {
	set, err := compileSecrets(ca, bindings)
	if err != nil {
		return err
	}
	s.secrets.Store(set)
	return nil
}

func compileSecrets(ca *CA, bs []Binding) (*secretSet, error) {
	if len(bs) == 0 {
		return nil, nil
	}
	if ca == nil {
		return nil, fmt.Errorf("%w: bindings need a CA", ErrInvalidBinding)
	}
	if len(bs) > maxBindings {
		return nil, fmt.Errorf("%w: more than %d bindings", ErrInvalidBinding, maxBindings)
	}
	set := &secretSet{ca: ca}
	var vals, phs [][]byte
	for i, b := range bs {
		cb, err := compileBinding(b)
		if err != nil {
			return nil, fmt.Errorf("%w: secrets[%d] %s: %w", ErrInvalidBinding, i, quoteShort(b.Name), err)
		}
		for _, o := range set.bindings {
			if o.Placeholder == b.Placeholder {
				return nil, fmt.Errorf("%w: secrets[%d] %s: placeholder already used by %s", ErrInvalidBinding, i, quoteShort(b.Name), quoteShort(o.Name))
			}
		}
		set.bindings = append(set.bindings, cb)
		vals, phs = append(vals, cb.Value), append(phs, []byte(cb.Placeholder))
	}
	set.scrub = newPatterns(vals, phs)
	return set, nil
}

// compileBinding checks b and returns a copy that shares no memory with
// the caller's.
func compileBinding(b Binding) (binding, error) {
	switch {
	case b.Name == "" || len(b.Name) > maxNameLen || !printable(b.Name, false):
		return binding{}, fmt.Errorf("name must be 1..%d printable ASCII characters", maxNameLen)
	case len(b.Placeholder) < minPlaceholderLen || len(b.Placeholder) > maxPlaceholderLen || !printable(b.Placeholder, false):
		return binding{}, fmt.Errorf("placeholder must be %d..%d printable ASCII characters without spaces", minPlaceholderLen, maxPlaceholderLen)
	case len(b.Value) == 0 || len(b.Value) > maxValueLen:
		return binding{}, fmt.Errorf("value must be 1..%d bytes", maxValueLen)
	case len(b.Hosts) == 0 || len(b.Hosts) > maxBindingHosts:
		return binding{}, fmt.Errorf("want 1..%d hosts", maxBindingHosts)
	}
	if err := checkInjectedHeader(b); err != nil {
		return binding{}, err
	}
	cb := binding{Binding: b}
	cb.Value = append([]byte(nil), b.Value...)
	cb.Hosts = append([]string(nil), b.Hosts...)
	for i, h := range b.Hosts {
		r, reason := parseEntry(h)
		if reason == "" && r.kind == ruleIP {
			reason = "bind secrets to host names, not IP addresses"
		}
		if reason != "" {
			return binding{}, fmt.Errorf("hosts[%d] %s: %s", i, quoteShort(h), reason)
		}
		if r.port == 0 {
			r.port = 443
		}
		cb.hosts = append(cb.hosts, r)
	}
	return cb, nil
}

// checkInjectedHeader checks Header and Format. Framing and routing
// headers are refused: a value written into Host or Content-Length would
// turn a credential into a way to redirect or desynchronise the request.
func checkInjectedHeader(b Binding) error {
	if b.Header == "" {
		if b.Format != "" {
			return errors.New("format without header")
		}
		return nil
	}
	if !httpguts.ValidHeaderFieldName(b.Header) {
		return fmt.Errorf("header %s is not a valid header name", quoteShort(b.Header))
	}
	switch k := http.CanonicalHeaderKey(b.Header); k {
	case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Te", "Trailer",
		"Expect", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Content-Encoding", "Accept-Encoding":
		return fmt.Errorf("header %s cannot carry a secret", k)
	}
	if b.Format != "" && (!strings.Contains(b.Format, "{value}") || len(b.Format) > maxFormatLen || !printable(b.Format, true)) {
		return fmt.Errorf(`format must contain "{value}" and be at most %d printable ASCII characters`, maxFormatLen)
	}
	for _, c := range b.Value {
		if c == '\r' || c == '\n' || c == 0 {
			// In a header, a line break would end it and start another.
			return errors.New("a value injected into a header cannot contain CR, LF or NUL")
		}
	}
	return nil
}

func printable(s string, spaces bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == ' ' && !spaces {
			return false
		}
	}
	return true
}

// boundTo reports whether b's hosts cover the target: by name (never an IP
// literal), exact or below a wildcard, and port.
func (b *binding) boundTo(t target) bool {
	for _, r := range b.hosts {
		if r.port == t.port && nameMatches(r, t.name) {
			return true
		}
	}
	return false
}

// namesHost reports whether b's hosts cover the target's name on any port.
func (b *binding) namesHost(t target) bool {
	for _, r := range b.hosts {
		if nameMatches(r, t.name) {
			return true
		}
	}
	return false
}

// nameMatches matches a name rule as the allow-list does: a wildcard
// covers names below its domain, not the domain itself.
func nameMatches(r rule, name string) bool {
	switch {
	case name == "":
		return false
	case r.kind == ruleName:
		return name == r.name
	case r.kind == ruleSuffix:
		return len(name) > len(r.name) && strings.HasSuffix(name, r.name)
	}
	return false
}

// binds reports whether any binding covers t, so that a tunnel to t is
// intercepted.
func (set *secretSet) binds(t target) bool {
	if set == nil {
		return false
	}
	for i := range set.bindings {
		if set.bindings[i].boundTo(t) {
			return true
		}
	}
	return false
}
