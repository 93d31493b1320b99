package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/e2e/npmreg"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
	"github.com/airlockhq/airlock/internal/tasks"
)

// harnessPacks is where e2e/harnessnode/fetch.sh puts the pinned tarballs.
var harnessPacks = filepath.Join("harnessnode", "packs")

// harnessEnv is a server on a fake internet that serves the npm registry
// (the pinned harness tarballs) at https://allowed.test/npm/.
type harnessEnv struct {
	n   *fakenet.Net
	s   *server
	reg *npmreg.Registry
}

func startHarnessEnv(t *testing.T) *harnessEnv {
	t.Helper()
	if files, _ := filepath.Glob(filepath.Join(harnessPacks, "*.tgz")); len(files) == 0 {
		linuxtest.Lacking(t, t.Name(), harnessPacks+" is empty (run e2e/harnessnode/fetch.sh)")
	}
	n, s := startTrusting(t)
	reg, err := npmreg.New(harnessPacks)
	if err != nil {
		t.Fatal(err)
	}
	n.Handle("/npm/", reg)
	return &harnessEnv{n: n, s: s, reg: reg}
}

// buildHarness builds the harness's template the way an admin would, with
// the harness table's own install command, from the fake registry (a
// mirror, to npm: its address and CA are npm settings).
func (e *harnessEnv) buildHarness(t *testing.T, name string) client.Template {
	t.Helper()
	h, ok := tasks.Lookup(name)
	if !ok || h.Install() == "" {
		t.Fatalf("harness %s has no install command", name)
	}
	ca := filepath.Join(t.TempDir(), "registry-ca.pem")
	if err := os.WriteFile(ca, e.n.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	start := time.Now()
	tmpl, cached, err := e.s.admin().BuildTemplate(ctx, client.TemplateBuild{
		Name: h.Template,
		Steps: []client.BuildStep{
			{Copy: &client.CopyStep{Src: ca, Dst: "/home/user/registry-ca.pem"}},
			{Run: h.Install()},
		},
		Env: map[string]string{
			"NPM_CONFIG_REGISTRY": "https://" + fakenet.AllowedName + "/npm/",
			"NPM_CONFIG_CAFILE":   "/home/user/registry-ca.pem",
		},
		Network: client.AllowOnly(fakenet.AllowedName),
	}, &log)
	if err != nil || cached {
		t.Fatalf("build %s (cached %v): %v\n%s", h.Template, cached, err, log.String())
	}
	t.Logf("built %s (%d MiB) in %v", h.Template, tmpl.SizeBytes>>20, time.Since(start).Round(time.Millisecond))
	return tmpl
}

// TestHarnessTemplates builds the Codex and Claude Code templates with npm
// in build sandboxes, and checks that each CLI runs in a sandbox of its
// template (with no network at all).
func TestHarnessTemplates(t *testing.T) {
	e := startHarnessEnv(t)
	for _, name := range []string{tasks.HarnessCodex, tasks.HarnessClaude} {
		h, _ := tasks.Lookup(name)
		e.buildHarness(t, name)
		sb := must[client.Sandbox](t)(e.s.admin().CreateSandbox(ctx, client.CreateRequest{Template: h.Template}))
		res := must[client.ExecResult](t)(e.s.admin().Exec(ctx, sb.ID, client.ExecRequest{Command: h.Argv(tasks.Request{})[0] + " --version", Timeout: time.Minute}))
		version := h.Package[strings.LastIndex(h.Package, "@")+1:]
		if res.ExitCode != 0 || !strings.Contains(res.Stdout, version) {
			t.Errorf("%s --version in a %s sandbox: %+v", name, h.Template, res)
		}
	}
}
