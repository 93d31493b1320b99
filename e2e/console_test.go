package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// consoleShots are the pages run.mjs must have photographed, in order.
var consoleShots = []string{"sign-in", "create-form-bad-timeout", "create-form", "terminal", "files", "network-log",
	"replay", "replay-from-the-bottom", "audit-verified", "sandbox-overview", "secrets", "usage", "keys-and-tenants",
	"sandboxes-stopped", "sandboxes-list", "not-found",
	"narrow-sandboxes", "narrow-create-form", "narrow-overview", "narrow-processes", "narrow-files", "narrow-network",
	"narrow-audit", "narrow-terminal", "narrow-replay", "narrow-secrets", "narrow-usage", "narrow-admin", "narrow-nothing-here",
	"other-tenant-not-found", "narrow-sign-in"}

// TestConsole walks issue 10's acceptance through the web console in
// Debian's headless Chromium (e2e/consolenode: playwright-core pinned in its
// package-lock.json, no downloaded browser), against a daemon whose proxy
// reaches the fake internet: sign in, create a sandbox from the form, type
// in its terminal, upload by input and by drop, allow a denied host with
// one click and see the retry through, replay the session, verify the
// audit chain, destroy a sandbox from the list; another tenant's cookie
// gets 404 for that sandbox, and the cookie of a signed-out session 401.
// Issue 18's: the form's timeout takes Go durations with inline errors, a
// failed upstream shows as failed, the replay player opens in view below
// the header, the audit list counts what the check verified, the charts
// open with the server's history, the list opens on running sandboxes
// (stopped ones one click away, in the URL), an unknown path shows the
// console's "nothing here", and every page fits 420 px. The screenshots go to
// $AIRLOCK_TEST_ARTIFACTS (default e2e/artifacts/console).
func TestConsole(t *testing.T) {
	node, dir, chromium, shots := browserTest(t, "the console browser test", "")

	n := fakenet.Start(t)
	s := startServer(t, "", "--egress-dns", n.DNS)
	admin := s.admin()
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "console-b"}))
	keyB := must[client.NewKey](t)(admin.CreateKey(ctx, "console-b", "browser")).Key
	t.Cleanup(func() { destroyAll(t, admin) })
	doomed := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Metadata: map[string]string{"owner": "console-e2e-doomed"}}))
	ended := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Metadata: map[string]string{"owner": "console-e2e-ended"}}))
	if err := admin.DeleteSandbox(ctx, ended.ID); err != nil {
		t.Fatal(err)
	}

	upload := make([]byte, 3000) // random bytes: an upload that mangled binary would show
	rand.Read(upload)
	secret := make([]byte, 12)
	rand.Read(secret)
	secretValue := "console-secret-" + hex.EncodeToString(secret)

	out := runConsole(t, node, dir, []string{
		"AIRLOCK_URL=" + s.url, "AIRLOCK_KEY=" + s.adminKey, "AIRLOCK_KEY_B=" + keyB, "AIRLOCK_TENANT_B=console-b",
		"AIRLOCK_ALLOWED_HOST=" + fakenet.AllowedName, "AIRLOCK_DENIED_HOST=" + fakenet.DeniedName,
		"AIRLOCK_UPLOAD_B64=" + base64.StdEncoding.EncodeToString(upload), "AIRLOCK_SECRET_VALUE=" + secretValue,
		"AIRLOCK_SCREENSHOTS=" + shots, "AIRLOCK_CHROMIUM=" + chromium, "AIRLOCK_DOOMED=" + doomed.ID,
		"AIRLOCK_STOPPED=" + ended.ID,
	})
	id, cookieA, cookieB := out["SANDBOX"], out["COOKIE_A"], out["COOKIE_B"]

	// What the browser did, seen through the API.
	sb := must[client.Sandbox](t)(admin.GetSandbox(ctx, id))
	if sb.Metadata["owner"] != "console-e2e" {
		t.Errorf("sandbox made by the form: metadata %v, want owner=console-e2e", sb.Metadata)
	}
	if p := must[client.NetworkPolicy](t)(admin.GetNetwork(ctx, id)); !slices.Contains(p.Allow, fakenet.DeniedName) || !slices.Contains(p.Allow, fakenet.AllowedName) {
		t.Errorf("live policy after one click: %+v, want the form's %s and the clicked %s", p, fakenet.AllowedName, fakenet.DeniedName)
	}
	if sb := must[client.Sandbox](t)(admin.GetSandbox(ctx, doomed.ID)); sb.State != client.StateStopped {
		t.Errorf("sandbox destroyed from the list: state %q, want stopped", sb.State)
	}
	var got bytes.Buffer
	must[int64](t)(admin.ReadFile(ctx, id, "/home/user/console-upload.bin", &got))
	if !bytes.Equal(got.Bytes(), upload) {
		t.Errorf("file uploaded in the browser: %d bytes read back, not the %d uploaded", got.Len(), len(upload))
	}
	var decisions []string
	for _, ev := range must[[]client.NetEvent](t)(admin.NetworkLog(ctx, id, 0, 0)) {
		if ev.Host == fakenet.DeniedName {
			decisions = append(decisions, ev.Decision)
		}
	}
	if !slices.Equal(decisions, []string{"denied", "allowed"}) {
		t.Errorf("network log for %s: %v, want denied then allowed", fakenet.DeniedName, decisions)
	}
	if hits := n.Hits(fakenet.DeniedIP + ":80"); hits != 1 {
		t.Errorf("%s reached %d times, want once (the retry)", fakenet.DeniedName, hits)
	}
	// The session typed into in the browser is the recording it replayed.
	if ses := must[[]client.Session](t)(admin.ListSessions(ctx, id)); len(ses) != 1 {
		t.Errorf("sessions after the terminal tab: %+v, want the one it made", ses)
	} else {
		rc := must[io.ReadCloser](t)(admin.SessionCast(ctx, id, ses[0].ID))
		cast, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Contains(cast, []byte("hello-console")) {
			t.Errorf("cast of %s: %v, %d bytes without hello-console", ses[0].ID, err, len(cast))
		}
	}
	if v := must[client.AuditVerify](t)(admin.VerifyAudit(ctx, id)); !v.OK {
		t.Errorf("audit chain: %+v", v)
	}

	// Cookies: signed out is dead; another tenant's finds nothing.
	for _, tc := range []struct {
		name, cookie, method, path string
		csrf                       bool
		origin                     string
		want                       int
	}{
		{"signed-out cookie lists sandboxes", cookieA, "GET", "/v1/sandboxes", false, "", 401},
		{"signed-out cookie reads the sandbox", cookieA, "GET", "/v1/sandboxes/" + id, false, "", 401},
		{"tenant B reads A's sandbox", cookieB, "GET", "/v1/sandboxes/" + id, false, "", 404},
		{"tenant B reads A's file", cookieB, "GET", "/v1/sandboxes/" + id + "/files?path=/home/user/console-upload.bin", false, "", 404},
		{"tenant B reads A's network log", cookieB, "GET", "/v1/sandboxes/" + id + "/network/log", false, "", 404},
		{"tenant B destroys A's sandbox", cookieB, "DELETE", "/v1/sandboxes/" + id, true, "", 404},
		{"tenant B posts without the CSRF header", cookieB, "POST", "/v1/sandboxes", false, "", 403},
		{"another site's page rides on B's cookie", cookieB, "GET", "/v1/sandboxes", false, "http://evil.example", 403},
		{"tenant B lists its own", cookieB, "GET", "/v1/sandboxes", false, "", 200},
	} {
		if code, body := cookieCall(t, s, tc.cookie, tc.method, tc.path, tc.csrf, tc.origin); code != tc.want {
			t.Errorf("%s: %s %s: %d %s, want %d", tc.name, tc.method, tc.path, code, body, tc.want)
		}
	}
	if _, err := admin.GetSandbox(ctx, id); err != nil {
		t.Errorf("A's sandbox after B's attempts: %v", err)
	}
	// A path nobody owns: the console's "nothing here" page for a browser
	// (run.mjs looked at it), the API's JSON 404 for a program.
	for _, tc := range []struct{ accept, wantType string }{
		{"text/html,application/xhtml+xml,*/*;q=0.8", "text/html"},
		{"", "application/json"},
	} {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/nothing-here", nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.wantType) {
			t.Errorf("GET /nothing-here (Accept %q): %d %s, want 404 %s", tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"), tc.wantType)
		}
	}

	for i, name := range consoleShots {
		f := filepath.Join(shots, fmt.Sprintf("%02d-%s.png", i+1, name))
		if fi, err := os.Stat(f); err != nil || fi.Size() < 10<<10 {
			t.Errorf("screenshot %s: %v (a page worth looking at is more than 10 KiB)", f, err)
		}
	}
	if err := admin.DeleteSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	assertNoSandboxesLeft(t, s, id, doomed.ID, ended.ID)
}

// runConsole runs run.mjs and returns its KEY value lines; it fails t
// unless the script ends with "ok".
func runConsole(t *testing.T, node, dir string, env []string) map[string]string {
	t.Helper()
	cmd := exec.Command(node, "run.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(env, "HTTPS_PROXY=", "HTTP_PROXY=", "https_proxy=", "http_proxy=", "NO_PROXY=*")...)
	out := runNode(t, cmd, 5*time.Minute)
	vals := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && strings.ToUpper(k) == k {
			vals[k] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{"SANDBOX", "COOKIE_A", "COOKIE_B"} {
		if vals[k] == "" {
			t.Fatalf("run.mjs printed no %s line", k)
		}
	}
	return vals
}

// browserTest is what a console browser test needs: node and the
// consolenode project's directory, Debian's chromium, the built console,
// and its screenshot directory (consoleArtifacts).
func browserTest(t *testing.T, test, page string) (node, dir, chromium, shots string) {
	node, dir = nodeProject(t, "consolenode", "playwright-core", test)
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		linuxtest.Lacking(t, test, "chromium is not installed (.ci/run installs Debian's chromium)")
	}
	if _, err := os.Stat("../internal/console/dist/index.html"); err != nil {
		linuxtest.Lacking(t, test, "the console is not built (cd web && npm ci && npm run build)")
	}
	return node, dir, chromium, consoleArtifacts(t, page)
}

// consoleArtifacts is a browser test's screenshot directory, emptied of
// an earlier run's pictures so that none can pass for this run's:
// TestConsole's (page "") or, beside it, another test's (page names it).
func consoleArtifacts(t *testing.T, page string) string {
	dir := os.Getenv("AIRLOCK_TEST_ARTIFACTS")
	switch {
	case dir == "" && page == "":
		dir = filepath.Join("artifacts", "console")
	case dir == "":
		dir = filepath.Join("artifacts", "console-"+page)
	case page != "":
		dir = filepath.Join(dir, page)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "[0-9][0-9]-*.png"))
	for _, f := range append(old, filepath.Join(dir, "failure.png")) {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return dir
}

// cookieCall is a request carrying only a console session cookie, as a
// browser (or a page of another origin riding on it) would send it.
func cookieCall(t *testing.T, s *server, cookie, method, path string, csrf bool, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: "airlock_session", Value: cookie})
	req.Header.Set("Content-Type", "application/json")
	if csrf {
		req.Header.Set("X-Airlock-CSRF", "1")
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// destroyAll destroys every sandbox the client can list, so that a run
// that failed halfway leaves nothing behind.
func destroyAll(t *testing.T, c *client.Client) {
	page, err := c.ListSandboxes(ctx, client.ListOptions{State: client.StateRunning})
	if err != nil {
		t.Errorf("list sandboxes for cleanup: %v", err)
		return
	}
	for _, sb := range page.Sandboxes {
		if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
			t.Errorf("destroy %s: %v", sb.ID, err)
		}
	}
}
