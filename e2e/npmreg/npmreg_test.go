package npmreg

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writePack writes an npm-pack-like tarball with package.json under top/.
func writePack(t *testing.T, dir, file, top, manifest string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct{ name, body string }{
		{top + "/README.md", "readme"},
		{top + "/package.json", manifest},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const (
	codexManifest = `{"name":"@openai/codex","version":"0.169.0","description":"d",
		"bin":{"codex":"bin/codex.js"},
		"optionalDependencies":{"@openai/codex-linux-x64":"npm:@openai/codex@0.169.0-linux-x64"}}`
	codexLinuxManifest = `{"name":"@openai/codex","version":"0.169.0-linux-x64","os":["linux"],"cpu":["x64"]}`
	claudeManifest     = `{"name":"@anthropic-ai/claude-code","version":"2.1.328",
		"scripts":{"postinstall":"node install.cjs","prepare":"x"},"engines":{"node":">=22.0.0"}}`
	leftPadManifest = `{"name":"left-pad","version":"1.3.0"}`
)

// fixture is a served registry over a directory of small tarballs.
type fixture struct {
	reg   *Registry
	srv   *httptest.Server
	files map[string]string // "name@version" -> path
}

func newFixture(t *testing.T, opts ...Option) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{files: map[string]string{
		"@openai/codex@0.169.0":             writePack(t, dir, "a.tgz", "package", codexManifest),
		"@openai/codex@0.169.0-linux-x64":   writePack(t, dir, "b.tgz", "package", codexLinuxManifest),
		"@anthropic-ai/claude-code@2.1.328": writePack(t, dir, "c.tgz", "package", claudeManifest),
		// npm strips the top directory whatever its name.
		"left-pad@1.3.0": writePack(t, dir, "d.tgz", "left-pad", leftPadManifest),
	}}
	// Not a tarball: ignored.
	os.WriteFile(filepath.Join(dir, "packs.sha512"), []byte("x"), 0o644)
	reg, err := New(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/npm/", reg)
	f.reg, f.srv = reg, httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) get(t *testing.T, path, accept string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func digests(t *testing.T, file string) dist {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s512, s1 := sha512.Sum512(b), sha1.Sum(b)
	return dist{Integrity: "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), Shasum: hex.EncodeToString(s1[:])}
}

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return doc
}

func TestFullPackument(t *testing.T) {
	f := newFixture(t)
	resp, body := f.get(t, "/npm/@openai%2fcodex", "application/json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	distOf := func(id, tarball string) map[string]any {
		d := digests(t, f.files[id])
		return map[string]any{"tarball": f.srv.URL + tarball, "integrity": d.Integrity, "shasum": d.Shasum}
	}
	want := map[string]any{
		"_id":       "@openai/codex",
		"name":      "@openai/codex",
		"dist-tags": map[string]any{"latest": "0.169.0"},
		"versions": map[string]any{
			"0.169.0": map[string]any{
				"_id": "@openai/codex@0.169.0", "name": "@openai/codex", "version": "0.169.0",
				"description": "d", "bin": map[string]any{"codex": "bin/codex.js"},
				"optionalDependencies": map[string]any{"@openai/codex-linux-x64": "npm:@openai/codex@0.169.0-linux-x64"},
				"dist":                 distOf("@openai/codex@0.169.0", "/npm/@openai/codex/-/codex-0.169.0.tgz"),
			},
			"0.169.0-linux-x64": map[string]any{
				"_id": "@openai/codex@0.169.0-linux-x64", "name": "@openai/codex", "version": "0.169.0-linux-x64",
				"os": []any{"linux"}, "cpu": []any{"x64"},
				"dist": distOf("@openai/codex@0.169.0-linux-x64", "/npm/@openai/codex/-/codex-0.169.0-linux-x64.tgz"),
			},
		},
	}
	if diff := cmp.Diff(want, decode(t, body)); diff != "" {
		t.Errorf("packument (-want +got):\n%s", diff)
	}
}

func TestAbbreviatedPackument(t *testing.T) {
	f := newFixture(t)
	// What npm 11 sends.
	accept := "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"
	resp, body := f.get(t, "/npm/@anthropic-ai%2fclaude-code", accept)
	if got := resp.Header.Get("Content-Type"); got != abbreviatedType {
		t.Errorf("Content-Type %q, want %q", got, abbreviatedType)
	}
	d := digests(t, f.files["@anthropic-ai/claude-code@2.1.328"])
	want := map[string]any{
		"name":      "@anthropic-ai/claude-code",
		"dist-tags": map[string]any{"latest": "2.1.328"},
		"versions": map[string]any{"2.1.328": map[string]any{
			"name": "@anthropic-ai/claude-code", "version": "2.1.328",
			"engines":          map[string]any{"node": ">=22.0.0"},
			"hasInstallScript": true, // npm uses it to plan the postinstall
			"dist": map[string]any{
				"tarball":   f.srv.URL + "/npm/@anthropic-ai/claude-code/-/claude-code-2.1.328.tgz",
				"integrity": d.Integrity, "shasum": d.Shasum,
			},
		}},
	}
	if diff := cmp.Diff(want, decode(t, body)); diff != "" {
		t.Errorf("abbreviated packument (-want +got):\n%s", diff)
	}
}

func TestScopedNameForms(t *testing.T) {
	f := newFixture(t)
	_, want := f.get(t, "/npm/@openai%2fcodex", "")
	for _, path := range []string{"/npm/@openai/codex", "/npm/@openai%2Fcodex", "/npm/%40openai%2fcodex"} {
		resp, body := f.get(t, path, "")
		if resp.StatusCode != 200 || !bytes.Equal(body, want) {
			t.Errorf("GET %s: %d, body differs from @openai%%2fcodex's: %s", path, resp.StatusCode, body)
		}
	}
}

// TestTarballIntegrity fetches each tarball through its packument's URL, as
// npm does, and checks the bytes against dist.integrity and dist.shasum.
func TestTarballIntegrity(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"@openai%2fcodex", "@anthropic-ai%2fclaude-code", "left-pad"} {
		_, body := f.get(t, "/npm/"+name, "")
		var doc struct {
			Versions map[string]struct{ Dist dist }
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		for v, m := range doc.Versions {
			path, ok := strings.CutPrefix(m.Dist.Tarball, f.srv.URL)
			if !ok {
				t.Fatalf("%s@%s: tarball %q is not on the registry", name, v, m.Dist.Tarball)
			}
			resp, tgz := f.get(t, path, "")
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s: %d", path, resp.StatusCode)
			}
			s512, s1 := sha512.Sum512(tgz), sha1.Sum(tgz)
			got := dist{Tarball: m.Dist.Tarball, Integrity: "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), Shasum: hex.EncodeToString(s1[:])}
			if diff := cmp.Diff(m.Dist, got); diff != "" {
				t.Errorf("%s@%s: served bytes vs dist (-dist +bytes):\n%s", name, v, diff)
			}
		}
	}
}

func TestNotFound(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{
		"/npm/@openai%2fcodex-darwin-arm64", // a platform package not in dir
		"/npm/@anthropic-ai/claude-code-linux-x64",
		"/npm/@openai/codex/-/codex-0.168.0.tgz",
		"/npm/@openai/codex/-/codex-0.169.0.tar",
		"/npm/left-pad/-/sub/left-pad-1.3.0.tgz",
		"/npm/@openai/codex/0.169.0",
		"/npm/@openai",
		"/npm/",
		"/npm/.hidden",
	} {
		resp, body := f.get(t, path, "")
		if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/json" || string(body) != `{"error":"Not found"}`+"\n" {
			t.Errorf("GET %s: %d %q %s, want 404 {\"error\":\"Not found\"}", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	resp, err := f.srv.Client().Post(f.srv.URL+"/npm/left-pad", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}

func TestBaseURL(t *testing.T) {
	f := newFixture(t, BaseURL("https://allowed.test/npm/"))
	_, body := f.get(t, "/npm/left-pad", "")
	var doc struct {
		Versions map[string]struct{ Dist dist }
	}
	json.Unmarshal(body, &doc)
	if got, want := doc.Versions["1.3.0"].Dist.Tarball, "https://allowed.test/npm/left-pad/-/left-pad-1.3.0.tgz"; got != want {
		t.Errorf("tarball %q, want %q", got, want)
	}
}

func TestPrefix(t *testing.T) {
	dir := t.TempDir()
	writePack(t, dir, "x.tgz", "package", leftPadManifest)
	reg, err := New(dir, Prefix("/"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/left-pad/-/left-pad-1.3.0.tgz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("tarball at root prefix: %d", resp.StatusCode)
	}
}

func TestRequests(t *testing.T) {
	f := newFixture(t)
	f.get(t, "/npm/@openai%2fcodex", "")
	f.get(t, "/npm/@openai%2fcodex-win32-x64", "")
	want := []Request{
		{Method: "GET", Path: "/npm/@openai%2fcodex", Status: 200},
		{Method: "GET", Path: "/npm/@openai%2fcodex-win32-x64", Status: 404},
	}
	if diff := cmp.Diff(want, f.reg.Requests()); diff != "" {
		t.Errorf("Requests (-want +got):\n%s", diff)
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		packs func(t *testing.T, dir string)
		want  string
	}{
		{"duplicate", func(t *testing.T, dir string) {
			writePack(t, dir, "a.tgz", "package", leftPadManifest)
			writePack(t, dir, "b.tgz", "package", leftPadManifest)
		}, "left-pad@1.3.0 is in both"},
		{"no package.json", func(t *testing.T, dir string) {
			writePack(t, dir, "a.tgz", "package/nested", leftPadManifest)
		}, "no package.json"},
		{"bad version", func(t *testing.T, dir string) {
			writePack(t, dir, "a.tgz", "package", `{"name":"x","version":"1.0"}`)
		}, "bad version"},
		{"bad name", func(t *testing.T, dir string) {
			writePack(t, dir, "a.tgz", "package", `{"name":"../x","version":"1.0.0"}`)
		}, "bad name"},
		{"not gzip", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "a.tgz"), []byte("plain"), 0o644)
		}, "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.packs(t, dir)
			_, err := New(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := New(filepath.Join(t.TempDir(), "absent")); err == nil {
		t.Error("New of a missing directory succeeded")
	}
}

func TestLatest(t *testing.T) {
	for _, tc := range []struct {
		versions []string
		want     string
	}{
		{[]string{"0.169.0", "0.169.0-linux-x64", "0.169.0-win32-x64"}, "0.169.0"},
		{[]string{"1.10.0", "1.9.0", "1.2.0"}, "1.10.0"},
		{[]string{"2.0.0-rc.1", "1.0.0"}, "1.0.0"},
		{[]string{"1.0.0-alpha.2", "1.0.0-alpha.10", "1.0.0-alpha"}, "1.0.0-alpha.10"},
		{[]string{"1.0.0-beta", "1.0.0-alpha.beta", "1.0.0-2"}, "1.0.0-beta"},
	} {
		pv := &packageVersions{versions: map[string]*pack{}}
		for _, v := range tc.versions {
			pv.versions[v] = nil
		}
		if got := pv.latest(); got != tc.want {
			t.Errorf("latest of %q = %q, want %q", tc.versions, got, tc.want)
		}
	}
}

// FuzzParsePath checks that whatever path a client sends, a name the
// Registry looks up is a valid package name and a tarball name cannot
// climb out of its package.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/npm/@openai/codex", "/npm/left-pad/-/left-pad-1.3.0.tgz", "/npm/@a/b/-/../../c.tgz", "/npm/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		name, tarball, ok := parsePath("/npm/", p)
		if !ok {
			return
		}
		if !validName(name) || strings.Contains(name, "/.") || strings.HasPrefix(name, ".") {
			t.Errorf("parsePath(%q) name %q", p, name)
		}
		if strings.Contains(tarball, "/") || strings.HasPrefix(tarball, ".") {
			t.Errorf("parsePath(%q) tarball %q", p, tarball)
		}
	})
}

// TestTLSTarballURL: without BaseURL, tarball URLs take the scheme of the
// connection and the request's Host, so npm fetches them as it reached the
// packument (https://allowed.test/npm/... behind the fake internet).
func TestTLSTarballURL(t *testing.T) {
	dir := t.TempDir()
	writePack(t, dir, "x.tgz", "package", leftPadManifest)
	reg, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(reg)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/npm/left-pad", nil)
	req.Host = "allowed.test"
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Versions map[string]struct{ Dist dist }
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if got, want := doc.Versions["1.3.0"].Dist.Tarball, "https://allowed.test/npm/left-pad/-/left-pad-1.3.0.tgz"; got != want {
		t.Errorf("tarball %q, want %q", got, want)
	}
}
