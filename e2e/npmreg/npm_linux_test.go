package npmreg

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/netns"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// harnessPacks is where e2e/harnessnode/fetch.sh puts the pinned tarballs.
var harnessPacks = filepath.Join("..", "harnessnode", "packs")

// TestRealNPMInstall installs the harness CLIs with the real npm client
// from a Registry, in a network namespace that has only lo: if npm (or a
// postinstall, or the installed CLI) needed anything beyond the registry's
// files, the install or the --version run fails instead of quietly using
// the internet.
func TestRealNPMInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("installs ~340 MB of tarballs")
	}
	packs := requirePacks(t)
	npm, err := exec.LookPath("npm")
	if err != nil {
		linuxtest.Lacking(t, t.Name(), "npm is not installed")
	}
	if os.Geteuid() != 0 {
		linuxtest.Lacking(t, t.Name(), "needs root for a network namespace")
	}
	reg, err := New(packs)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := netns.New()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if err := netns.SetLoopbackUp(ns); err != nil {
		t.Fatal(err)
	}
	l, err := netns.Listen(ns, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: reg}
	go srv.Serve(l)
	defer srv.Close()
	registryURL := "http://" + l.Addr().String() + "/npm/"

	for _, tc := range []struct {
		spec, bin, wantVersion string
		wantTarballs           []string
		// native, if set, is a file under the prefix that must be an ELF
		// binary after install: a postinstall script puts it there.
		native string
	}{{
		spec:        "@openai/codex@0.169.0",
		bin:         "codex",
		wantVersion: "0.169.0",
		wantTarballs: []string{
			"/npm/@openai/codex/-/codex-0.169.0-linux-x64.tgz",
			"/npm/@openai/codex/-/codex-0.169.0.tgz",
		},
	}, {
		spec:        "@anthropic-ai/claude-code@2.1.328",
		bin:         "claude",
		wantVersion: "2.1.328",
		wantTarballs: []string{
			"/npm/@anthropic-ai/claude-code-linux-x64/-/claude-code-linux-x64-2.1.328.tgz",
			"/npm/@anthropic-ai/claude-code/-/claude-code-2.1.328.tgz",
		},
		// The tarball ships a shell stub that exits 1; install.cjs, the
		// postinstall, replaces it with the platform package's binary.
		native: "lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe",
	}} {
		t.Run(tc.bin, func(t *testing.T) {
			before := len(reg.Requests())
			dir := t.TempDir()
			prefix := filepath.Join(dir, "prefix")
			env := npmEnv(dir, registryURL)
			start := time.Now()
			out := runIn(t, ns, env, npm, "install", "-g", "--prefix", prefix,
				"--no-audit", "--no-fund", "--no-update-notifier", tc.spec)
			t.Logf("npm install %s (%v):\n%s", tc.spec, time.Since(start).Round(time.Millisecond), out)

			var tarballs []string
			for _, r := range reg.Requests()[before:] {
				t.Logf("%s %s %d", r.Method, r.Path, r.Status)
				if strings.Contains(r.Path, "/-/") {
					if r.Status != http.StatusOK {
						t.Errorf("%s %s: %d", r.Method, r.Path, r.Status)
					}
					tarballs = append(tarballs, r.Path)
				}
			}
			slices.Sort(tarballs)
			if !slices.Equal(tarballs, tc.wantTarballs) {
				t.Errorf("tarballs fetched: %q, want %q", tarballs, tc.wantTarballs)
			}

			if tc.native != "" {
				magic, err := readMagic(filepath.Join(prefix, tc.native))
				if err != nil || magic != "\x7fELF" {
					t.Errorf("%s is not an ELF binary (did the postinstall run?): %v", tc.native, err)
				}
			}
			out = runIn(t, ns, env, filepath.Join(prefix, "bin", tc.bin), "--version")
			if !strings.Contains(out, tc.wantVersion) {
				t.Errorf("%s --version = %q, want it to name %s", tc.bin, out, tc.wantVersion)
			}
		})
	}
}

// requirePacks returns the directory of harness tarballs, or skips the
// test (fails it in CI, whose install step runs fetch.sh).
func requirePacks(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(harnessPacks, "*.tgz"))
	if len(files) == 0 {
		linuxtest.Lacking(t, t.Name(), harnessPacks+" is empty (run e2e/harnessnode/fetch.sh)")
	}
	return harnessPacks
}

// npmEnv is an environment where npm reads no config, cache or credentials
// of the host: a fresh cache means every tarball comes from the registry.
func npmEnv(dir, registry string) []string {
	home := filepath.Join(dir, "home")
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"NPM_CONFIG_REGISTRY=" + registry,
		"NPM_CONFIG_CACHE=" + filepath.Join(dir, "cache"),
		"NPM_CONFIG_USERCONFIG=" + filepath.Join(home, ".npmrc"),
		"NPM_CONFIG_GLOBALCONFIG=" + filepath.Join(dir, "npmrc"),
	}
}

// runIn runs a command inside ns and returns its combined output, failing
// t if it does not exit 0 within five minutes.
func runIn(t *testing.T, ns *os.File, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var out []byte
	// The child inherits the namespace of the thread that forks it.
	err := netns.Do(ns, func() (err error) {
		out, err = cmd.CombinedOutput()
		return err
	})
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// readMagic returns the first four bytes of file.
func readMagic(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, 4)
	_, err = io.ReadFull(f, b)
	return string(b), err
}
