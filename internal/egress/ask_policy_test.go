package egress

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAskJSON: "ask" reads as true, false or a list, round-trips in that
// form, and anything else is refused naming the field.
func TestAskJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Policy
		out     string // json.Marshal of the decoded policy
		norm    string // json.Marshal of Compile's Policy()
		wantErr string
	}{
		{name: "true", in: `{"mode":"allowlist","ask":true}`,
			want: Policy{Mode: ModeAllowlist, Ask: Ask{All: true}},
			out:  `{"mode":"allowlist","ask":true}`, norm: `{"mode":"allowlist","ask":true,"ask_timeout_s":60}`},
		{name: "false", in: `{"mode":"allowlist","ask":false}`,
			want: Policy{Mode: ModeAllowlist}, out: `{"mode":"allowlist"}`, norm: `{"mode":"allowlist"}`},
		{name: "null", in: `{"mode":"allowlist","ask":null}`,
			want: Policy{Mode: ModeAllowlist}, out: `{"mode":"allowlist"}`, norm: `{"mode":"allowlist"}`},
		{name: "empty list", in: `{"mode":"allowlist","ask":[]}`,
			want: Policy{Mode: ModeAllowlist}, out: `{"mode":"allowlist"}`, norm: `{"mode":"allowlist"}`},
		{name: "list and timeout", in: `{"mode":"allowlist","ask":["*.github.com","api.example.com:8443"],"ask_timeout_s":5}`,
			want: Policy{Mode: ModeAllowlist, Ask: Ask{Patterns: []string{"*.github.com", "api.example.com:8443"}}, AskTimeoutS: 5},
			out:  `{"mode":"allowlist","ask":["*.github.com","api.example.com:8443"],"ask_timeout_s":5}`,
			norm: `{"mode":"allowlist","ask":["*.github.com","api.example.com:8443"],"ask_timeout_s":5}`},
		{name: "string", in: `{"mode":"allowlist","ask":"yes"}`, wantErr: errAskJSON.Error()},
		{name: "number", in: `{"mode":"allowlist","ask":1}`, wantErr: errAskJSON.Error()},
		{name: "object", in: `{"mode":"allowlist","ask":{"all":true}}`, wantErr: errAskJSON.Error()},
		{name: "list of numbers", in: `{"mode":"allowlist","ask":["a.test",1]}`, wantErr: errAskJSON.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Policy
			err := json.Unmarshal([]byte(tt.in), &p)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("Unmarshal(%s) = %v, want %s", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal(%s): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, p); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
			if b, _ := json.Marshal(p); string(b) != tt.out {
				t.Errorf("Marshal = %s, want %s", b, tt.out)
			}
			r := mustCompile(t, p)
			if b, _ := json.Marshal(r.Policy()); string(b) != tt.norm {
				t.Errorf("Marshal(Policy()) = %s, want %s", b, tt.norm)
			}
		})
	}
}

func TestCompileAsk(t *testing.T) {
	all := Ask{All: true}
	tests := []struct {
		name    string
		in      Policy
		want    Policy
		wantErr string
	}{
		{name: "timeout default", in: Policy{Mode: ModeAllowlist, Ask: all},
			want: Policy{Mode: ModeAllowlist, Ask: all, AskTimeoutS: 60}},
		{name: "timeout bounds", in: Policy{Mode: ModeAllowlist, Ask: all, AskTimeoutS: 3600},
			want: Policy{Mode: ModeAllowlist, Ask: all, AskTimeoutS: 3600}},
		{name: "timeout without ask kept", in: Policy{Mode: ModeAllowlist, AskTimeoutS: 30},
			want: Policy{Mode: ModeAllowlist, AskTimeoutS: 30}},
		{name: "timeout too long", in: Policy{Mode: ModeAllowlist, Ask: all, AskTimeoutS: 3601},
			wantErr: "network.ask_timeout_s 3601: want seconds from 1 to 3600 (0 or absent: 60)"},
		{name: "timeout negative", in: Policy{Mode: ModeAllowlist, AskTimeoutS: -1},
			wantErr: "network.ask_timeout_s -1: want seconds from 1 to 3600 (0 or absent: 60)"},
		{name: "bad entry names its index", in: Policy{Mode: ModeAllowlist, Ask: Ask{Patterns: []string{"a.test", "b.test", "https://c.test"}}},
			wantErr: `network.ask[2] "https://c.test": a URL scheme is not allowed; write the host only, as in "example.com"`},
		{name: "wildcard alone", in: Policy{Mode: ModeAllowlist, Ask: Ask{Patterns: []string{"*"}}},
			wantErr: `network.ask[0] "*": "*" alone would allow every host; list the domains instead, or "0.0.0.0/0" and "::/0" for every public address and name`},
		{name: "too many", in: Policy{Mode: ModeAllowlist, Ask: Ask{Patterns: numbered(257)}},
			wantErr: `network.ask[256] "h256.example": more than 256 entries`},
		{name: "true with mode none", in: Policy{Ask: all},
			wantErr: `network.ask: network mode "none" has no network to ask about; set mode "allowlist" (an empty allow list with "ask": true asks about every target)`},
		{name: "list with mode none", in: Policy{Mode: ModeNone, Ask: Ask{Patterns: []string{"a.test"}}},
			wantErr: `network.ask[0] "a.test": network mode "none" has no network to ask about; set mode "allowlist" (an empty allow list with "ask": true asks about every target)`},
		{name: "true and a list", in: Policy{Mode: ModeAllowlist, Ask: Ask{All: true, Patterns: []string{"a.test"}}},
			wantErr: "network.ask: true already asks about every target; give a list or true, not both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Compile(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Compile error = %v, want %s", err, tt.wantErr)
				}
				var pe *PatternError
				if strings.HasPrefix(tt.wantErr, "network.ask[") && (!errors.As(err, &pe) || pe.List != "ask") {
					t.Errorf("Compile error %#v, want a *PatternError of list ask", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if diff := cmp.Diff(tt.want, r.Policy()); diff != "" {
				t.Errorf("Policy() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAskMatch: allow wins over ask, deny over both; an ask list covers
// what its entries cover (80 and 443 without a port), "ask": true every
// other target.
func TestAskMatch(t *testing.T) {
	askAll := func(allow, deny []string) Policy {
		return Policy{Mode: ModeAllowlist, Allow: allow, Deny: deny, Ask: Ask{All: true}}
	}
	askList := func(ask ...string) Policy {
		return Policy{Mode: ModeAllowlist, Allow: []string{"pypi.org"}, Deny: []string{"evil.github.com"}, Ask: Ask{Patterns: ask}}
	}
	const heldAll = `no allow rule matches %s; "ask": true holds it for a person`
	tests := []struct {
		name string
		p    Policy
		host string
		port int
		want Decision
	}{
		{"ask all: unlisted name", askAll(nil, nil), "unlisted.test", 443,
			Decision{Ask: true, List: "ask", Reason: strings.Replace(heldAll, "%s", "unlisted.test:443", 1)}},
		{"ask all: any port", askAll(nil, nil), "unlisted.test", 22,
			Decision{Ask: true, List: "ask", Reason: strings.Replace(heldAll, "%s", "unlisted.test:22", 1)}},
		{"ask all: IP literal", askAll(nil, nil), "203.0.113.9", 8080,
			Decision{Ask: true, List: "ask", Reason: strings.Replace(heldAll, "%s", "203.0.113.9:8080", 1)}},
		{"ask all: allowed wins", askAll([]string{"pypi.org"}, nil), "pypi.org", 443,
			Decision{Allowed: true, List: "allow", Rule: "pypi.org", Reason: `matched allow rule "pypi.org"`}},
		{"ask all: deny wins", askAll(nil, []string{"*.evil.test"}), "a.evil.test", 443,
			Decision{List: "deny", Rule: "*.evil.test", Reason: `denied by rule "*.evil.test"`}},
		{"ask all: whole internet allows names", askAll([]string{"0.0.0.0/0"}, nil), "a.test", 443,
			Decision{Allowed: true, List: "allow", Rule: "0.0.0.0/0", PublicOnly: true,
				Reason: `matched allow rule "0.0.0.0/0", if every address of the name is public`}},
		{"list: wildcard", askList("*.github.com"), "api.github.com", 443,
			Decision{Ask: true, List: "ask", Rule: "*.github.com",
				Reason: `no allow rule matches api.github.com:443; ask rule "*.github.com" holds it for a person`}},
		{"list: not the apex", askList("*.github.com"), "github.com", 443,
			Decision{Reason: "no allow rule matches github.com:443"}},
		{"list: no port covers 80 and 443 only", askList("*.github.com"), "api.github.com", 22,
			Decision{Reason: "no allow rule matches api.github.com:22"}},
		{"list: a port", askList("db.test:5432"), "db.test", 5432,
			Decision{Ask: true, List: "ask", Rule: "db.test:5432",
				Reason: `no allow rule matches db.test:5432; ask rule "db.test:5432" holds it for a person`}},
		{"list: a block", askList("203.0.113.0/24"), "203.0.113.9", 80,
			Decision{Ask: true, List: "ask", Rule: "203.0.113.0/24",
				Reason: `no allow rule matches 203.0.113.9:80; ask rule "203.0.113.0/24" holds it for a person`}},
		{"list: deny wins", askList("*.github.com"), "evil.github.com", 443,
			Decision{List: "deny", Rule: "evil.github.com", Reason: `denied by rule "evil.github.com"`}},
		{"list: allowed wins", askList("*.org"), "pypi.org", 443,
			Decision{Allowed: true, List: "allow", Rule: "pypi.org", Reason: `matched allow rule "pypi.org"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, ip, err := ParseHost(tt.host)
			if err != nil {
				t.Fatal(err)
			}
			got := mustCompile(t, tt.p).Match(name, ip, tt.port)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Match(%s:%d) (-want +got):\n%s", tt.host, tt.port, diff)
			}
		})
	}
}

// FuzzAskJSON feeds policies as the API takes them. A policy that decodes
// and compiles must survive a round trip through its JSON unchanged, and
// an error about an ask entry must point at it.
func FuzzAskJSON(f *testing.F) {
	f.Add(`{"mode":"allowlist","ask":true}`)
	f.Add(`{"mode":"allowlist","ask":["*.github.com","db.test:5432","203.0.113.0/24"],"ask_timeout_s":5}`)
	f.Add(`{"mode":"allowlist","ask":["*",""],"deny":["a.test"]}`)
	f.Add(`{"mode":"none","ask":false,"ask_timeout_s":3601}`)
	f.Add(`{"ask":[null]}`)
	f.Fuzz(func(t *testing.T, in string) {
		var p Policy
		if json.Unmarshal([]byte(in), &p) != nil {
			return
		}
		r, err := Compile(p)
		if err != nil {
			var pe *PatternError
			if errors.As(err, &pe) && pe.List == "ask" &&
				(pe.Index < 0 || pe.Index >= len(p.Ask.Patterns) || p.Ask.Patterns[pe.Index] != pe.Entry || pe.Reason == "") {
				t.Fatalf("Compile: %#v does not point at an entry of %q", pe, p.Ask.Patterns)
			}
			return
		}
		b, err := json.Marshal(r.Policy())
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", r.Policy(), err)
		}
		var p2 Policy
		if err := json.Unmarshal(b, &p2); err != nil {
			t.Fatalf("Unmarshal(%s) of Marshal's own output: %v", b, err)
		}
		r2, err := Compile(p2)
		if err != nil {
			t.Fatalf("Compile(%s) = %v after Compile accepted %s", b, err, in)
		}
		if diff := cmp.Diff(r.Policy(), r2.Policy()); diff != "" {
			t.Fatalf("JSON round trip (-first +second):\n%s", diff)
		}
		if d := r.Match("a.test", noIP, 443); d.Ask && (d.Allowed || d.List != "ask" || (d.Rule == "") != p.Ask.All) {
			t.Fatalf("Match(a.test:443) = %+v under %s", d, in)
		}
	})
}
