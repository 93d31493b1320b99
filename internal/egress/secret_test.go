package egress

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func validBinding() Binding {
	return Binding{Name: "API_KEY", Placeholder: "airlock-ph-" + strings.Repeat("ab", 20),
		Value: []byte("sk-value"), Hosts: []string{"api.example.com"}}
}

func TestSetSecretsValidates(t *testing.T) {
	ca, err := NewCA("sb-validate")
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(*Binding)) []Binding {
		b := validBinding()
		f(&b)
		return []Binding{b}
	}
	tests := []struct {
		name     string
		ca       *CA
		bindings []Binding
		wantErr  string // "" for none
	}{
		{"valid", ca, with(func(*Binding) {}), ""},
		{"none without a CA", nil, nil, ""},
		{"wildcard and port", ca, with(func(b *Binding) { b.Hosts = []string{"*.github.com", "api.example.com:8443"} }), ""},
		{"header and format", ca, with(func(b *Binding) { b.Header, b.Format = "Authorization", "Bearer {value}" }), ""},
		{"line break in a body-only value", ca, with(func(b *Binding) { b.Value, b.Body = []byte("-----BEGIN\nKEY\n"), true }), ""},
		{"no CA", nil, with(func(*Binding) {}), "need a CA"},
		{"no name", ca, with(func(b *Binding) { b.Name = "" }), "name must be"},
		{"short placeholder", ca, with(func(b *Binding) { b.Placeholder = "ph" }), "placeholder must be"},
		{"placeholder with space", ca, with(func(b *Binding) { b.Placeholder = "airlock ph 0123456789abcdef" }), "placeholder must be"},
		{"no value", ca, with(func(b *Binding) { b.Value = nil }), "value must be"},
		{"huge value", ca, with(func(b *Binding) { b.Value = make([]byte, maxValueLen+1) }), "value must be"},
		{"no hosts", ca, with(func(b *Binding) { b.Hosts = nil }), "hosts"},
		{"IP host", ca, with(func(b *Binding) { b.Hosts = []string{"127.0.0.1"} }), "not IP addresses"},
		{"IPv6 host", ca, with(func(b *Binding) { b.Hosts = []string{"[::1]:443"} }), "not IP addresses"},
		{"CIDR host", ca, with(func(b *Binding) { b.Hosts = []string{"10.0.0.0/8"} }), "not IP addresses"},
		{"star", ca, with(func(b *Binding) { b.Hosts = []string{"*"} }), `"*" alone`},
		{"URL", ca, with(func(b *Binding) { b.Hosts = []string{"https://api.example.com"} }), "scheme"},
		{"Host header", ca, with(func(b *Binding) { b.Header = "host" }), "cannot carry a secret"},
		{"bad header name", ca, with(func(b *Binding) { b.Header = "X Key" }), "not a valid header name"},
		{"format without value", ca, with(func(b *Binding) { b.Header, b.Format = "X-Key", "Bearer" }), "format must contain"},
		{"format without header", ca, with(func(b *Binding) { b.Format = "{value}" }), "format without header"},
		{"line break in a header value", ca, with(func(b *Binding) { b.Header, b.Value = "X-Key", []byte("a\r\nX-Evil: 1") }), "CR, LF"},
		{"same placeholder twice", ca, append(with(func(*Binding) {}), with(func(b *Binding) { b.Name = "OTHER" })...), "already used"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := &Sandbox{}
			err := sb.SetSecrets(tt.ca, tt.bindings)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("SetSecrets: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("SetSecrets error = %v, want one containing %q", err, tt.wantErr)
			case tt.wantErr != "" && !errors.Is(err, ErrInvalidBinding):
				t.Fatalf("SetSecrets error %v is not ErrInvalidBinding", err)
			case tt.wantErr != "" && sb.secrets.Load() != nil:
				t.Fatal("a refused set was installed")
			}
		})
	}
}

func TestBindingMatches(t *testing.T) {
	set, err := compileSecrets(&CA{}, []Binding{
		func() Binding { b := validBinding(); b.Hosts = []string{"API.Example.com."}; return b }(),
		func() Binding {
			b := validBinding()
			b.Placeholder += "2"
			b.Hosts = []string{"*.github.com", "git.test:8443"}
			return b
		}(),
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		target string
		want   []bool // per binding
	}{
		{"api.example.com:443", []bool{true, false}},
		{"api.example.com:80", []bool{false, false}}, // no port: 443 only
		{"x.api.example.com:443", []bool{false, false}},
		{"api.github.com:443", []bool{false, true}},
		{"github.com:443", []bool{false, false}}, // a wildcard is not its apex
		{"git.test:8443", []bool{false, true}},
		{"git.test:443", []bool{false, false}},
		{"127.0.0.1:443", []bool{false, false}},
	}
	for _, tt := range tests {
		tg, err := parseHostPort(tt.target, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []bool
		for i := range set.bindings {
			got = append(got, set.bindings[i].boundTo(tg))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s bound to (-want +got):\n%s", tt.target, diff)
		}
		if set.binds(tg) != (tt.want[0] || tt.want[1]) {
			t.Errorf("%s: binds = %v", tt.target, set.binds(tg))
		}
	}
}

// The caller may reuse or zero its slices: the proxy keeps its own copy.
func TestSetSecretsCopies(t *testing.T) {
	b := validBinding()
	set, err := compileSecrets(&CA{}, []Binding{b})
	if err != nil {
		t.Fatal(err)
	}
	clear(b.Value)
	b.Hosts[0] = "evil.example"
	if got := string(set.bindings[0].Value); got != "sk-value" {
		t.Errorf("value = %q after the caller zeroed its copy", got)
	}
	if got := set.bindings[0].Hosts[0]; got != "api.example.com" {
		t.Errorf("hosts[0] = %q after the caller changed its copy", got)
	}
}
