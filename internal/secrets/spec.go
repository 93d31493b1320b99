package secrets

import (
	"errors"
	"fmt"
	"strings"
)

// Limits on what a tenant may store.
const (
	MaxValueBytes = 16 << 10 // a secret value at most 16 KiB
	MaxHosts      = 32

	maxNameLen   = 128
	maxHeaderLen = 256  // far above any real header name
	maxFormatLen = 1024 // room for a prefix such as "Bearer " and then some
)

// Inject says how a value is sent when the sandbox did not put the
// placeholder in the request itself: set Header to Format with "{value}"
// replaced. Optional.
type Inject struct {
	Header string `json:"header"`
	Format string `json:"format"` // must contain "{value}" exactly once; default "{value}"
}

// ValueMarker is what Inject.Format holds where the value goes.
const ValueMarker = "{value}"

// Spec is a secret as the API takes it.
type Spec struct {
	Name   string   `json:"name"`
	Value  string   `json:"value"`
	Hosts  []string `json:"hosts"`
	Inject *Inject  `json:"inject,omitempty"`
	Body   bool     `json:"body,omitempty"` // also replace the placeholder in request bodies
}

// String keeps a Spec printed by mistake (%v in a log line or an error)
// from showing its value.
func (s Spec) String() string {
	return fmt.Sprintf("secret %q (hosts %v)", s.Name, s.Hosts)
}

// GoString is String for %#v.
func (s Spec) GoString() string { return s.String() }

// Normalize puts s in the form Validate wants and the store keeps: hosts
// lower-cased (ASCII only; a non-ASCII host stays as it is for Validate to
// refuse) and an empty Inject.Format set to the default.
func (s *Spec) Normalize() {
	for i, h := range s.Hosts {
		if isASCII(h) {
			s.Hosts[i] = strings.ToLower(h)
		}
	}
	if s.Inject != nil && s.Inject.Format == "" {
		s.Inject.Format = ValueMarker
	}
}

// Validate checks s, naming the field at fault: `field "hosts[2]": ...`.
//
// An empty Value passes: whether one is required (create and rotate need
// one, a change of hosts does not) is the caller's rule. A non-empty one
// must be at most MaxValueBytes and hold no NUL.
//
// Hosts must be lower-case: the egress proxy compares them byte for byte,
// so "API.example.com" stored as written would never match. Call
// Normalize first to accept any case from users.
func (s Spec) Validate() error {
	if err := ValidateName(s.Name); err != nil {
		return err
	}
	if err := validateValue(s.Value); err != nil {
		return fieldErr("value", err)
	}
	if len(s.Hosts) == 0 {
		return fieldErr("hosts", errors.New("at least one host is required: a secret is only sent to the hosts it names"))
	}
	if len(s.Hosts) > MaxHosts {
		return fieldErr("hosts", fmt.Errorf("%d hosts; at most %d", len(s.Hosts), MaxHosts))
	}
	seen := make(map[string]bool, len(s.Hosts))
	for i, h := range s.Hosts {
		if err := checkHost(h); err != nil {
			return fieldErr(fmt.Sprintf("hosts[%d]", i), err)
		}
		if seen[h] {
			return fieldErr(fmt.Sprintf("hosts[%d]", i), fmt.Errorf("%q is listed twice", h))
		}
		seen[h] = true
	}
	if s.Inject != nil {
		if err := s.Inject.validate(s.Value); err != nil {
			return err
		}
	}
	return nil
}

// ValidateName is the name rule alone (for binding lists on sandbox
// create): an environment variable name, ^[A-Za-z_][A-Za-z0-9_]{0,127}$,
// since the sandbox gets an environment variable of that name.
func ValidateName(name string) error {
	if err := checkName(name); err != nil {
		return fieldErr("name", err)
	}
	return nil
}

func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("required")
	case len(name) > maxNameLen:
		return fmt.Errorf("longer than %d bytes", maxNameLen)
	case '0' <= name[0] && name[0] <= '9':
		return errors.New("must not start with a digit: it names an environment variable")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(isLetter(c) || '0' <= c && c <= '9' || c == '_') {
			return fmt.Errorf("invalid character %q: use letters, digits and _, as in an environment variable name", c)
		}
	}
	return nil
}

func validateValue(v string) error {
	switch {
	case len(v) > MaxValueBytes:
		return fmt.Errorf("%d bytes; at most %d", len(v), MaxValueBytes)
	case strings.IndexByte(v, 0) >= 0:
		return errors.New("contains a NUL byte")
	}
	return nil
}

func (in *Inject) validate(value string) error {
	if err := checkHeader(in.Header); err != nil {
		return fieldErr("inject.header", err)
	}
	if err := checkFormat(in.Format); err != nil {
		return fieldErr("inject.format", err)
	}
	// The value goes into a header line: a line break in it would end the
	// header and let whoever wrote the value add headers of their own
	// (request smuggling into the upstream).
	if strings.ContainsAny(value, "\r\n") {
		return fieldErr("value", errors.New("contains a line break, so it cannot be sent in a header (inject)"))
	}
	return nil
}

// hopByHop are the headers a proxy owns or that frame the message: setting
// one would let a secret's owner rewrite where or how the request goes.
var hopByHop = map[string]bool{
	"host": true, "content-length": true, "transfer-encoding": true,
	"connection": true, "upgrade": true, "te": true, "trailer": true,
	"keep-alive": true,
}

func checkHeader(h string) error {
	switch {
	case h == "":
		return errors.New("required")
	case len(h) > maxHeaderLen:
		return fmt.Errorf("longer than %d bytes", maxHeaderLen)
	}
	for i := 0; i < len(h); i++ {
		if !isTchar(h[i]) {
			return fmt.Errorf("invalid character %q in a header name", h[i])
		}
	}
	lower := strings.ToLower(h)
	if hopByHop[lower] || strings.HasPrefix(lower, "proxy-") {
		return fmt.Errorf("%s is a header the proxy controls; it cannot carry a secret", h)
	}
	return nil
}

func checkFormat(f string) error {
	switch {
	case f == "":
		return nil // the default, ValueMarker alone
	case len(f) > maxFormatLen:
		return fmt.Errorf("longer than %d bytes", maxFormatLen)
	case strings.Count(f, ValueMarker) != 1:
		return fmt.Errorf("must contain %s exactly once", ValueMarker)
	case strings.ContainsAny(f, "\r\n\x00"):
		// A line break would end the header line: see Inject.validate.
		return errors.New("contains a line break or NUL")
	}
	return nil
}

// isTchar reports whether c may appear in an HTTP token (RFC 9110 5.6.2).
func isTchar(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func fieldErr(field string, err error) error {
	return fmt.Errorf("field %q: %w", field, err)
}
