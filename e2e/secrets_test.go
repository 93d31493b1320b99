package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// secretsEnv is a daemon that trusts the fake internet's CA upstream, a
// secret bound to allowed.test, and a sandbox holding its placeholder.
type secretsEnv struct {
	*egressEnv
	real        string
	placeholder string
}

// startTrusting starts a fake internet and a server whose egress proxy
// resolves names in it and trusts its CA (for the hosts it intercepts).
func startTrusting(t *testing.T) (*fakenet.Net, *server) {
	n := fakenet.Start(t)
	caFile := filepath.Join(t.TempDir(), "upstream-ca.pem")
	if err := os.WriteFile(caFile, n.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return n, startServer(t, "", "--egress-dns", n.DNS, "--egress-ca-file", caFile)
}

func startSecrets(t *testing.T) *secretsEnv {
	n, s := startTrusting(t)
	c := s.admin()
	b := make([]byte, 16)
	rand.Read(b)
	real := "sk-REAL-" + hex.EncodeToString(b)
	must[client.Secret](t)(c.CreateSecret(ctx, client.SecretRequest{Name: "OPENAI_API_KEY", Value: real, Hosts: []string{fakenet.AllowedName}}))
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{
		Secrets: []string{"OPENAI_API_KEY"}, Network: client.AllowOnly(fakenet.DeniedName),
	}))
	e := &secretsEnv{egressEnv: &egressEnv{t: t, n: n, s: s, c: c, sb: sb}, real: real}
	for _, f := range []string{"netprobe.py", "netprobe.js"} {
		probe, err := os.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		must[int64](t)(c.WriteFile(ctx, sb.ID, f, bytes.NewReader(probe), 0o644))
	}
	// The fake internet's own CA, for curl to reach a host the proxy does
	// not intercept.
	must[int64](t)(c.WriteFile(ctx, sb.ID, "upstream-ca.pem", bytes.NewReader(n.CAPEM), 0o644))
	e.placeholder, _ = e.sh(sb.ID, "printenv OPENAI_API_KEY")
	if !strings.HasPrefix(e.placeholder, "airlock-ph-") {
		t.Fatalf("placeholder in the sandbox: %q", e.placeholder)
	}
	return e
}

// pattern is a grep regex that matches the real value while the command
// line carrying it does not contain the value itself.
func (e *secretsEnv) pattern() string { return e.real[:6] + "[" + e.real[6:7] + "]" + e.real[7:] }

// lastSeen returns the Authorization header of the last request name's
// server received.
func (e *secretsEnv) lastSeen(name string) string {
	e.t.Helper()
	return lastAuthorization(e.t, e.n, name)
}

func TestSecretsInjected(t *testing.T) {
	e := startSecrets(t)
	id := e.sb.ID
	// Nowhere in the sandbox: environment, any file it can read, any
	// process's environment.
	out, code := e.sh(id, `p='`+e.pattern()+`'
		env | grep -c "$p"
		grep -rlas -e "$p" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr --exclude-dir=dev 2>/dev/null
		grep -las -e "$p" /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null
		echo done`)
	if code != 0 || out != "0\ndone" {
		t.Errorf("the real value is visible in the sandbox: %q (exit %d)", out, code)
	}

	// Over TLS to the bound host the server gets the value, and an echo of
	// it comes back as the placeholder.
	out, code = e.sh(id, `curl -sS --max-time 20 -H "Authorization: Bearer $OPENAI_API_KEY" https://allowed.test/echo`)
	if code != 0 || !strings.Contains(out, "Authorization: Bearer "+e.placeholder) || strings.Contains(out, e.real) {
		t.Errorf("echo seen by the sandbox (exit %d): %q", code, out)
	}
	if got := e.lastSeen(fakenet.AllowedName); got != "Bearer "+e.real {
		t.Errorf("bound host received %q, want the real value", got)
	}
	// Python and curl trust the sandbox's CA without flags (node if present).
	if out := e.probe("urllib", "https://allowed.test/"); out != "hello from allowed.test" {
		t.Errorf("python urllib over the intercepted tunnel: %q", out)
	}
	if out, code := e.sh(id, "command -v node >/dev/null || { echo skip; exit 0; }; node netprobe.js allowed.test"); code != 0 || (out != "skip" && out != "hello from allowed.test") {
		t.Errorf("node: exit %d, %q", code, out)
	}

	// To a host the secret is not bound to, the placeholder stays one.
	e.sh(id, `curl -sS --max-time 20 --cacert upstream-ca.pem -H "Authorization: Bearer $OPENAI_API_KEY" https://denied.test/echo`)
	if got := e.lastSeen(fakenet.DeniedName); got != "Bearer "+e.placeholder {
		t.Errorf("unbound host received %q, want the placeholder", got)
	}
	e.sh(id, `curl -sS --max-time 20 -H "Authorization: Bearer $OPENAI_API_KEY" http://denied.test/echo`)
	if got := e.lastSeen(fakenet.DeniedName); got != "Bearer "+e.placeholder {
		t.Errorf("unbound host over plain HTTP received %q, want the placeholder", got)
	}
	kinds := map[string]int{}
	raw, _ := json.Marshal(must[[]client.NetEvent](t)(e.c.NetworkLog(ctx, id, 0, 0)))
	var evs []struct{ Kind, Secret, Host string }
	json.Unmarshal(raw, &evs)
	for _, ev := range evs {
		if ev.Kind != "" {
			kinds[ev.Kind+" "+ev.Secret+" "+ev.Host]++
		}
	}
	if kinds["secret.injected OPENAI_API_KEY allowed.test"] == 0 || kinds["secret.misdirected OPENAI_API_KEY denied.test"] == 0 {
		t.Errorf("secret events: %v", kinds)
	}
	if bytes.Contains(raw, []byte(e.real)) {
		t.Errorf("the network log holds the real value")
	}

	// Another sandbox bound to the same secret: the first one's
	// placeholder means nothing in it.
	other := must[client.Sandbox](t)(e.c.CreateSandbox(ctx, client.CreateRequest{Secrets: []string{"OPENAI_API_KEY"}}))
	e.sh(other.ID, "curl -sS --max-time 20 -H 'Authorization: Bearer "+e.placeholder+"' https://allowed.test/echo")
	if got := e.lastSeen(fakenet.AllowedName); got != "Bearer "+e.placeholder {
		t.Errorf("sandbox B with A's placeholder: server received %q", got)
	}

	// Rotation, then deletion, take effect on the next request.
	must[client.Secret](t)(e.c.RotateSecret(ctx, "OPENAI_API_KEY", client.RotateSecretRequest{Value: "sk-ROTATED"}))
	e.sh(id, `curl -sS --max-time 20 -H "Authorization: Bearer $OPENAI_API_KEY" https://allowed.test/`)
	if got := e.lastSeen(fakenet.AllowedName); got != "Bearer sk-ROTATED" {
		t.Errorf("after rotation the server received %q", got)
	}
	if err := e.c.DeleteSecret(ctx, "OPENAI_API_KEY"); err != nil {
		t.Fatal(err)
	}
	// Without a secret the tunnel is no longer intercepted: curl must trust
	// the real server's CA now.
	before := len(e.n.Seen())
	e.sh(id, `cat .airlock/ca-bundle.pem upstream-ca.pem > both.pem; curl -sS --max-time 20 --cacert both.pem -H "Authorization: Bearer $OPENAI_API_KEY" https://allowed.test/`)
	if len(e.n.Seen()) == before {
		t.Errorf("after deletion the request did not reach the server")
	} else if got := e.lastSeen(fakenet.AllowedName); got != "Bearer "+e.placeholder {
		t.Errorf("after deletion the server received %q", got)
	}

	// The database holds no plaintext value.
	e.s.stop()
	for _, f := range []string{"airlock.db", "airlock.db-wal"} {
		b, err := os.ReadFile(filepath.Join(e.s.dataDir, f))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(e.real)) || bytes.Contains(b, []byte("sk-ROTATED")) {
			t.Errorf("%s holds a plaintext value", f)
		}
	}
}

func TestSecretsTenancyAndBadInput(t *testing.T) {
	e := startSecrets(t)
	admin := e.c
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "tenant-b"}))
	kb := must[client.NewKey](t)(admin.CreateKey(ctx, "tenant-b", "b"))
	b := client.New(e.s.url, kb.Key)
	if list := must[[]client.Secret](t)(b.ListSecrets(ctx)); len(list) != 0 {
		t.Errorf("tenant B lists %+v", list)
	}
	if _, err := b.CreateSandbox(ctx, client.CreateRequest{Secrets: []string{"OPENAI_API_KEY"}}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("tenant B binding A's secret: %v", err)
	}
	if err := b.DeleteSecret(ctx, "OPENAI_API_KEY"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("tenant B deleting A's secret: %v", err)
	}
	for _, req := range []client.SecretRequest{
		{Name: "", Value: "v", Hosts: []string{"a.test"}},
		{Name: "NOT-AN-ENV-NAME", Value: "v", Hosts: []string{"a.test"}},
		{Name: "OK", Value: "v"},
		{Name: "OK", Value: strings.Repeat("v", 17<<10), Hosts: []string{"a.test"}},
	} {
		if _, err := admin.CreateSecret(ctx, req); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("%.40v: %v, want invalid_argument", req, err)
		}
	}
	if _, err := admin.CreateSandbox(ctx, client.CreateRequest{Secrets: []string{"NO_SUCH_SECRET"}}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("binding an unknown secret: %v", err)
	}
	if list := must[[]client.Secret](t)(admin.ListSecrets(ctx)); len(list) != 1 {
		t.Errorf("after bad input: %+v", list)
	}
	page := must[client.Page](t)(admin.ListSandboxes(ctx, client.ListOptions{}))
	if len(page.Sandboxes) != 1 {
		t.Errorf("after bad input, %d sandboxes", len(page.Sandboxes))
	}
}

// After a daemon crash the sandbox's proxy comes back with its CA and
// bindings: the same placeholder still gets the value in.
func TestSecretsSurviveRestart(t *testing.T) {
	e := startSecrets(t)
	e.s.cmd.Process.Kill()
	e.s.cmd.Wait()
	e.s.cmd = nil
	e.s.start()
	e.c = e.s.admin()
	if p, _ := e.sh(e.sb.ID, "printenv OPENAI_API_KEY"); p != e.placeholder {
		t.Errorf("placeholder after restart: %q, want %q", p, e.placeholder)
	}
	if _, code := e.sh(e.sb.ID, `curl -sS --max-time 20 -H "Authorization: Bearer $OPENAI_API_KEY" https://allowed.test/`); code != 0 {
		t.Fatalf("curl after restart: exit %d", code)
	}
	if got := e.lastSeen(fakenet.AllowedName); got != "Bearer "+e.real {
		t.Errorf("after restart the bound host received %q", got)
	}
}
