package secrets

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func validSpec() Spec {
	return Spec{
		Name:  "OPENAI_API_KEY",
		Value: "sk-test-123",
		Hosts: []string{"api.openai.com"},
	}
}

func TestValidate(t *testing.T) {
	manyHosts := make([]string, MaxHosts+1)
	for i := range manyHosts {
		manyHosts[i] = fmt.Sprintf("h%d.example.com", i)
	}
	tests := []struct {
		name string
		edit func(*Spec)
		want string // "" = valid; else the error's prefix (field) and a part of it
	}{
		{"valid", func(*Spec) {}, ""},
		{"valid full", func(s *Spec) {
			s.Hosts = []string{"api.example.com", "*.example.org:8443", "localhost", "_svc.x-y.example.com:1", "h.example.com:65535"}
			s.Inject = &Inject{Header: "Authorization", Format: "Bearer {value}"}
			s.Body = true
		}, ""},
		{"valid value max", func(s *Spec) { s.Value = strings.Repeat("v", MaxValueBytes) }, ""},
		{"valid value multiline without inject", func(s *Spec) { s.Value = "-----BEGIN KEY-----\nabc\n-----END KEY-----\n" }, ""},
		{"valid empty value (caller's rule)", func(s *Spec) { s.Value = "" }, ""},
		{"valid inject default format", func(s *Spec) { s.Inject = &Inject{Header: "X-Api-Key"} }, ""},
		{"valid header tchars", func(s *Spec) { s.Inject = &Inject{Header: "X!#$%&'*+-.^_`|~9"} }, ""},
		{"valid name underscore", func(s *Spec) { s.Name = "_x" }, ""},
		{"valid name max", func(s *Spec) { s.Name = "A" + strings.Repeat("b", 127) }, ""},

		{"name empty", func(s *Spec) { s.Name = "" }, `field "name": required`},
		{"name digit first", func(s *Spec) { s.Name = "1KEY" }, `field "name": must not start with a digit`},
		{"name dash", func(s *Spec) { s.Name = "MY-KEY" }, `field "name": invalid character '-'`},
		{"name equals", func(s *Spec) { s.Name = "A=B" }, `field "name": invalid character '='`},
		{"name non-ascii", func(s *Spec) { s.Name = "KÉY" }, `field "name": invalid character`},
		{"name too long", func(s *Spec) { s.Name = "A" + strings.Repeat("b", 128) }, `field "name": longer than 128`},

		{"value too long", func(s *Spec) { s.Value = strings.Repeat("v", MaxValueBytes+1) }, `field "value": 16385 bytes; at most 16384`},
		{"value NUL", func(s *Spec) { s.Value = "a\x00b" }, `field "value": contains a NUL`},
		{"value CRLF with inject", func(s *Spec) {
			s.Value = "a\r\nX-Evil: 1"
			s.Inject = &Inject{Header: "Authorization"}
		}, `field "value": contains a line break`},

		{"hosts none", func(s *Spec) { s.Hosts = nil }, `field "hosts": at least one host`},
		{"hosts too many", func(s *Spec) { s.Hosts = manyHosts }, `field "hosts": 33 hosts; at most 32`},
		{"host duplicate", func(s *Spec) { s.Hosts = []string{"a.com", "b.com", "a.com"} }, `field "hosts[2]": "a.com" is listed twice`},
		{"host empty", func(s *Spec) { s.Hosts = []string{"a.com", ""} }, `field "hosts[1]": empty host`},
		{"host scheme", func(s *Spec) { s.Hosts = []string{"https://api.example.com"} }, `field "hosts[0]": a URL scheme`},
		{"host path", func(s *Spec) { s.Hosts = []string{"api.example.com/v1"} }, `field "hosts[0]": a path`},
		{"host query", func(s *Spec) { s.Hosts = []string{"api.example.com?x"} }, `field "hosts[0]": a path`},
		{"host userinfo", func(s *Spec) { s.Hosts = []string{"u@api.example.com"} }, `field "hosts[0]": userinfo`},
		{"host upper", func(s *Spec) { s.Hosts = []string{"API.example.com"} }, `field "hosts[0]": upper-case`},
		{"host non-ascii", func(s *Spec) { s.Hosts = []string{"\u212Aubernetes.default"} }, `field "hosts[0]": non-ASCII`},
		{"host ipv4", func(s *Spec) { s.Hosts = []string{"10.0.0.1"} }, `field "hosts[0]": IP addresses`},
		{"host ipv4 port", func(s *Spec) { s.Hosts = []string{"169.254.169.254:80"} }, `field "hosts[0]": IP addresses`},
		{"host ipv4 decimal", func(s *Spec) { s.Hosts = []string{"2130706433"} }, `field "hosts[0]": IP addresses`},
		{"host ipv4 hex", func(s *Spec) { s.Hosts = []string{"0x7f000001"} }, `field "hosts[0]": IP addresses`},
		{"host ipv4 octal", func(s *Spec) { s.Hosts = []string{"0177.0.0.1"} }, `field "hosts[0]": IP addresses`},
		{"host ipv6", func(s *Spec) { s.Hosts = []string{"::1"} }, `field "hosts[0]": IP addresses`},
		{"host ipv6 bracketed", func(s *Spec) { s.Hosts = []string{"[2001:db8::1]:443"} }, `field "hosts[0]": IP addresses`},
		{"host port zero", func(s *Spec) { s.Hosts = []string{"a.com:0"} }, `field "hosts[0]": port "0"`},
		{"host port big", func(s *Spec) { s.Hosts = []string{"a.com:65536"} }, `field "hosts[0]": port "65536"`},
		{"host port leading zero", func(s *Spec) { s.Hosts = []string{"a.com:0443"} }, `field "hosts[0]": port "0443"`},
		{"host port sign", func(s *Spec) { s.Hosts = []string{"a.com:+443"} }, `field "hosts[0]": port "+443"`},
		{"host port empty", func(s *Spec) { s.Hosts = []string{"a.com:"} }, `field "hosts[0]": port ""`},
		{"host wildcard tld", func(s *Spec) { s.Hosts = []string{"*.com"} }, `field "hosts[0]": a wildcard needs at least two labels`},
		{"host wildcard bare", func(s *Spec) { s.Hosts = []string{"*"} }, `field "hosts[0]": "*" is only allowed`},
		{"host wildcard inner", func(s *Spec) { s.Hosts = []string{"api.*.example.com"} }, `field "hosts[0]": "*" is only allowed`},
		{"host wildcard partial", func(s *Spec) { s.Hosts = []string{"*api.example.com"} }, `field "hosts[0]": "*" is only allowed`},
		{"host wildcard empty", func(s *Spec) { s.Hosts = []string{"*."} }, `field "hosts[0]": empty host`},
		{"host trailing dot", func(s *Spec) { s.Hosts = []string{"a.com."} }, `field "hosts[0]": trailing "."`},
		{"host empty label", func(s *Spec) { s.Hosts = []string{"a..com"} }, `field "hosts[0]": name has an empty label`},
		{"host long label", func(s *Spec) { s.Hosts = []string{strings.Repeat("a", 64) + ".com"} }, `field "hosts[0]": name has a label longer than 63`},
		{"host long name", func(s *Spec) { s.Hosts = []string{strings.Repeat("a.", 127) + "com"} }, `field "hosts[0]": name is longer than 253`},
		{"host hyphen", func(s *Spec) { s.Hosts = []string{"-a.com"} }, `field "hosts[0]": a label cannot start or end with a hyphen`},
		{"host space", func(s *Spec) { s.Hosts = []string{"a b.com"} }, `field "hosts[0]": invalid character ' '`},

		{"header empty", func(s *Spec) { s.Inject = &Inject{Format: "{value}"} }, `field "inject.header": required`},
		{"header space", func(s *Spec) { s.Inject = &Inject{Header: "X Key"} }, `field "inject.header": invalid character ' '`},
		{"header colon", func(s *Spec) { s.Inject = &Inject{Header: "X-Key:"} }, `field "inject.header": invalid character ':'`},
		{"header pseudo", func(s *Spec) { s.Inject = &Inject{Header: ":authority"} }, `field "inject.header": invalid character ':'`},
		{"header CRLF", func(s *Spec) { s.Inject = &Inject{Header: "X\r\nEvil"} }, `field "inject.header": invalid character '\r'`},
		{"header too long", func(s *Spec) { s.Inject = &Inject{Header: strings.Repeat("x", 257)} }, `field "inject.header": longer than 256`},
		{"header Host", func(s *Spec) { s.Inject = &Inject{Header: "host"} }, `field "inject.header": host is a header the proxy controls`},
		{"header Content-Length", func(s *Spec) { s.Inject = &Inject{Header: "Content-Length"} }, `field "inject.header": Content-Length is`},
		{"header Transfer-Encoding", func(s *Spec) { s.Inject = &Inject{Header: "TRANSFER-ENCODING"} }, `field "inject.header": TRANSFER-ENCODING is`},
		{"header Connection", func(s *Spec) { s.Inject = &Inject{Header: "Connection"} }, `field "inject.header": Connection is`},
		{"header Upgrade", func(s *Spec) { s.Inject = &Inject{Header: "Upgrade"} }, `field "inject.header": Upgrade is`},
		{"header TE", func(s *Spec) { s.Inject = &Inject{Header: "TE"} }, `field "inject.header": TE is`},
		{"header Trailer", func(s *Spec) { s.Inject = &Inject{Header: "Trailer"} }, `field "inject.header": Trailer is`},
		{"header Keep-Alive", func(s *Spec) { s.Inject = &Inject{Header: "Keep-Alive"} }, `field "inject.header": Keep-Alive is`},
		{"header Proxy-Authorization", func(s *Spec) { s.Inject = &Inject{Header: "Proxy-Authorization"} }, `field "inject.header": Proxy-Authorization is`},
		{"header proxy-anything", func(s *Spec) { s.Inject = &Inject{Header: "proxy-x"} }, `field "inject.header": proxy-x is`},

		{"format no marker", func(s *Spec) { s.Inject = &Inject{Header: "A", Format: "Bearer"} }, `field "inject.format": must contain {value} exactly once`},
		{"format two markers", func(s *Spec) { s.Inject = &Inject{Header: "A", Format: "{value}{value}"} }, `field "inject.format": must contain {value} exactly once`},
		{"format LF", func(s *Spec) { s.Inject = &Inject{Header: "A", Format: "{value}\nX-Evil: 1"} }, `field "inject.format": contains a line break`},
		{"format CR", func(s *Spec) { s.Inject = &Inject{Header: "A", Format: "\r{value}"} }, `field "inject.format": contains a line break`},
		{"format too long", func(s *Spec) { s.Inject = &Inject{Header: "A", Format: "{value}" + strings.Repeat("x", 1024)} }, `field "inject.format": longer than 1024`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.edit(&s)
			err := s.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Validate: nil, want %q", tt.want)
			case tt.want != "" && !strings.HasPrefix(err.Error(), tt.want):
				t.Fatalf("Validate: %q, want it to start with %q", err, tt.want)
			}
		})
	}
}

func TestValidateName(t *testing.T) {
	for name, ok := range map[string]bool{
		"GITHUB_TOKEN": true, "a": true, "_": true, "A1": true,
		"": false, "9": false, "A B": false, "A.B": false, "Ä": false,
	} {
		err := ValidateName(name)
		if (err == nil) != ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", name, err, ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), `field "name": `) {
			t.Errorf("ValidateName(%q) = %q: does not name the field", name, err)
		}
	}
}

func TestNormalize(t *testing.T) {
	s := Spec{
		Name: "K", Value: "v",
		Hosts:  []string{"API.Example.COM:443", "*.Example.org", "\u212Aubernetes.default"},
		Inject: &Inject{Header: "Authorization"},
	}
	s.Normalize()
	want := Spec{
		Name: "K", Value: "v",
		// The Kelvin sign stays, for Validate to refuse: folding it would
		// turn it into "kubernetes.default".
		Hosts:  []string{"api.example.com:443", "*.example.org", "\u212Aubernetes.default"},
		Inject: &Inject{Header: "Authorization", Format: "{value}"},
	}
	if d := cmp.Diff(want, s); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
	s.Hosts = s.Hosts[:2]
	if err := s.Validate(); err != nil {
		t.Errorf("Validate after Normalize: %v", err)
	}
}

// TestSpecNeverPrintsValue: a Spec that ends up in a log line or an error
// by mistake must not carry its value there.
func TestSpecNeverPrintsValue(t *testing.T) {
	s := validSpec()
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(verb, s); strings.Contains(out, s.Value) {
			t.Errorf("%s printed the value: %s", verb, out)
		}
		if out := fmt.Sprintf(verb, &s); strings.Contains(out, s.Value) {
			t.Errorf("%s of a pointer printed the value: %s", verb, out)
		}
	}
}
