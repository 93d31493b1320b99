package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/codeinterp"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestCodeInterpreterNode builds the code-interpreter template with
// `airlock template build code-interpreter` and drives it through the E2B
// facade with the unmodified @e2b/code-interpreter SDK (e2e/cinode,
// pinned in its package-lock.json; .ci/run installs it with npm ci):
// state across calls, streamed output, errors, a chart's PNG, contexts,
// timeouts, a language without a kernel. Then the server is killed and
// started again: the sandbox's interpreter, a job of its agent, is adopted
// (not started twice) and its kernel still holds what the first run set.
func TestCodeInterpreterNode(t *testing.T) {
	node, dir := nodeProject(t, "cinode", "@e2b/code-interpreter", "the E2B Code Interpreter SDK test")
	if v, err := exec.Command(node, "-p", "process.versions.node").Output(); err != nil || !nodeAtLeast(strings.TrimSpace(string(v)), 20, 18, 1) {
		linuxtest.Lacking(t, "the E2B Code Interpreter SDK test", fmt.Sprintf("the SDK needs node >= 20.18.1, found %q (%v)", strings.TrimSpace(string(v)), err))
	}
	if err := exec.Command(codeinterp.Python, "-c", "import jupyter_client, ipykernel, matplotlib, pandas, numpy").Run(); err != nil {
		linuxtest.Lacking(t, "the E2B Code Interpreter SDK test", "the host lacks the interpreter's Python packages (apt-get install "+codeinterp.Packages+")")
	}
	s := startServer(t, "")
	admin := s.admin()

	out, code := s.cli(s.adminKey, "template", "build", codeinterp.Template)
	if code != 0 {
		t.Fatalf("airlock template build %s: exit %d\n%s", codeinterp.Template, code, out)
	}
	tpl := must[client.Template](t)(admin.Template(ctx, codeinterp.Template))
	if tpl.Start == nil || tpl.Start.ReadyPort != codeinterp.Port || !strings.Contains(tpl.Start.Command, "server.py") {
		t.Fatalf("template %s: start %+v", tpl.Name, tpl.Start)
	}
	if out, code := s.cli(s.adminKey, "template", "build", codeinterp.Template); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("second build: exit %d\n%s", code, out)
	}

	nodeRun := func(limit time.Duration, args ...string) string {
		cmd := exec.Command(node, append([]string{"run.mjs", s.url, s.adminKey}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HTTPS_PROXY=", "HTTP_PROXY=", "https_proxy=", "http_proxy=")
		return string(runNode(t, cmd, limit))
	}
	// On a failure, what the interpreter wrote (its tracebacks) says why.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		page, _ := admin.ListSandboxes(ctx, client.ListOptions{State: client.StateRunning})
		for _, sb := range page.Sandboxes {
			for _, p := range must[[]client.Process](t)(admin.ListProcesses(ctx, sb.ID)) {
				if p.Tag == "template-start" {
					var out strings.Builder
					admin.ProcessOutput(ctx, sb.ID, p.Pid, 0, false, &out, &out)
					t.Logf("the interpreter of %s wrote:\n%s", sb.ID, out.String())
				}
			}
		}
	})
	var id string
	for _, line := range strings.Split(nodeRun(5*time.Minute, "main"), "\n") {
		if rest, ok := strings.CutPrefix(line, "SANDBOX "); ok {
			id = strings.TrimSpace(rest)
		}
	}
	if id == "" {
		t.Fatal("run.mjs printed no SANDBOX line")
	}
	starts := func() []client.Process {
		var out []client.Process
		for _, p := range must[[]client.Process](t)(admin.ListProcesses(ctx, id)) {
			if p.Tag == "template-start" {
				out = append(out, p)
			}
		}
		return out
	}
	before := starts()
	if len(before) != 1 || before[0].State != "running" {
		t.Fatalf("the sandbox's start processes: %+v, want the interpreter running", before)
	}

	restartServer(t, s, "kill -9", 500*time.Millisecond)
	if after := starts(); len(after) != 1 || after[0].Pid != before[0].Pid || after[0].State != "running" {
		t.Errorf("after the restart: %+v, want the one interpreter (pid %d) still running", after, before[0].Pid)
	}
	nodeRun(2*time.Minute, "after", id)
	assertNoSandboxesLeft(t, s, id)
}
