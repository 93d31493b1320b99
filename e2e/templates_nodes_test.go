package e2e

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/images/imagetest"
)

// TestTemplatesOnNodes: a control plane with no runtime of its own and
// two nodes. A template built on one node and an image imported through
// the control plane (which has no node to import into of its own) are
// used where they are while those nodes have room, and copied to the
// other node when the first drains: the copy holds the same files and
// runs the same start command. Concurrent creates that need a copy on
// one node make one copy. `template ls` says which nodes hold each, and
// a delete removes every copy, refusing while a node cannot be asked.
func TestTemplatesOnNodes(t *testing.T) {
	c := startCluster(t, "n1", "n2")
	admin := c.admin
	other := func(n string) string {
		if n == "n1" {
			return "n2"
		}
		return "n1"
	}

	// A template with a file and a start command, built on some node.
	build := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Build: true}))
	if r := must[client.ExecResult](t)(admin.Exec(ctx, build.ID, client.ExecRequest{
		Command: "mkdir -p /usr/local/share/tpl && echo from-the-template > /usr/local/share/tpl/data"})); r.ExitCode != 0 {
		t.Fatalf("build step: %+v", r)
	}
	tpl := must[client.Template](t)(admin.CommitTemplate(ctx, client.CommitTemplateRequest{Name: "tpl", SandboxID: build.ID,
		Start: &client.TemplateStart{Command: "echo started-$TPL_VAR > /tmp/started; exec sleep 100000", ReadyCommand: "test -s /tmp/started"}}))
	home := build.Node
	if !slices.Equal(tpl.Nodes, []string{home}) {
		t.Errorf("the committed template is on %v, its build ran on %s", tpl.Nodes, home)
	}
	check := func(sb client.Sandbox) {
		t.Helper()
		r := must[client.ExecResult](t)(admin.Exec(ctx, sb.ID, client.ExecRequest{Command: "cat /usr/local/share/tpl/data /tmp/started"}))
		if r.Stdout != "from-the-template\nstarted-x\n" {
			t.Errorf("sandbox on %s from the template: %+v", sb.Node, r)
		}
	}
	for range 2 {
		sb := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Template: "tpl", Env: map[string]string{"TPL_VAR": "x"}}))
		if sb.Node != home {
			t.Errorf("a sandbox from the template on %s, which has it and room, landed on %s", home, sb.Node)
		}
		check(sb)
	}

	// Its node draining, the template is copied to the other node.
	must[client.Node](t)(admin.DrainNode(ctx, home, true))
	waitNode(t, admin, home, "draining", 5*time.Second)
	moved := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Template: "tpl", Env: map[string]string{"TPL_VAR": "x"}}))
	if moved.Node != other(home) {
		t.Errorf("a sandbox from the template while %s drains landed on %s", home, moved.Node)
	}
	check(moved)
	got := must[client.Template](t)(admin.Template(ctx, "tpl"))
	if !slices.Equal(got.Nodes, []string{"n1", "n2"}) || got.Start == nil || got.Start.Command != tpl.Start.Command || !got.CreatedAt.Equal(tpl.CreatedAt) || got.SizeBytes != tpl.SizeBytes {
		t.Errorf("the template after its copy: %+v, committed %+v", got, tpl)
	}

	// Three at once that need a copy on one node: one copy is made.
	conc := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Build: true}))
	must[client.ExecResult](t)(admin.Exec(ctx, conc.ID, client.ExecRequest{Command: "mkdir -p /usr/local/share/c && echo c > /usr/local/share/c/f"}))
	must[client.Template](t)(admin.CommitTemplate(ctx, client.CommitTemplateRequest{Name: "conc", SandboxID: conc.ID}))
	// conc is on the one ready node; drain it, let the other take them.
	must[client.Node](t)(admin.DrainNode(ctx, home, false))
	waitNode(t, admin, home, "ready", 5*time.Second)
	must[client.Node](t)(admin.DrainNode(ctx, conc.Node, true))
	waitNode(t, admin, conc.Node, "draining", 5*time.Second)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			sb, err := admin.CreateSandbox(ctx, client.CreateRequest{Template: "conc"})
			if err != nil {
				t.Errorf("concurrent create: %v", err)
				return
			}
			if sb.Node != other(conc.Node) {
				t.Errorf("concurrent create on %s", sb.Node)
			}
			if r, err := admin.Exec(ctx, sb.ID, client.ExecRequest{Command: "cat /usr/local/share/c/f"}); err != nil || r.Stdout != "c\n" {
				t.Errorf("concurrent create's sandbox: %+v %v", r, err)
			}
		})
	}
	wg.Wait()
	if dirs, _ := filepath.Glob(filepath.Join(c.nodes[other(conc.Node)].dataDir, "templates", ".conc@*")); len(dirs) != 1 {
		t.Errorf("copies of conc on %s: %v, want one", other(conc.Node), dirs)
	}
	must[client.Node](t)(admin.DrainNode(ctx, conc.Node, false))
	waitNode(t, admin, conc.Node, "ready", 5*time.Second)

	// An image imported through a control plane with no local node lands
	// on a node, and is copied on demand with its environment.
	file := filepath.Join(t.TempDir(), "img.tar")
	ref, _ := name.ParseReference("test/img:latest")
	if err := tarball.WriteToFile(file, ref, imagetest.Image(t)); err != nil {
		t.Fatal(err)
	}
	if out, code := c.s.cli(c.s.adminKey, "template", "import", "img", file); code != 0 {
		t.Fatalf("template import on a control plane without a local node: %d %q", code, out)
	}
	img := must[client.Template](t)(admin.Template(ctx, "img"))
	if len(img.Nodes) != 1 || img.Image != "file:img.tar" {
		t.Fatalf("the imported image: %+v", img)
	}
	must[client.Node](t)(admin.DrainNode(ctx, img.Nodes[0], true))
	waitNode(t, admin, img.Nodes[0], "draining", 5*time.Second)
	onImg := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Template: "img"}))
	if r := must[client.ExecResult](t)(admin.Exec(ctx, onImg.ID, client.ExecRequest{Command: "cat /etc/os-release; echo $IMAGE_VAR; pwd"})); onImg.Node == img.Nodes[0] || r.Stdout != "ID=testimage\nfrom-image\n/srv\n" {
		t.Errorf("a sandbox from the image copied to %s: %+v", onImg.Node, r)
	}
	must[client.Node](t)(admin.DrainNode(ctx, img.Nodes[0], false))
	waitNode(t, admin, img.Nodes[0], "ready", 5*time.Second)

	out, code := c.s.cli(c.s.adminKey, "template", "ls")
	if code != 0 || !strings.Contains(out, "NODES") {
		t.Fatalf("template ls: %d %q", code, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "tpl" || f[0] == "img") && !strings.Contains(l, "n1,n2") {
			t.Errorf("template ls: %s is not on both nodes: %q", f[0], l)
		}
	}

	// A delete while a node cannot be asked deletes nothing.
	n2 := c.nodes["n2"]
	n2.stop(syscall.SIGKILL)
	code, body := callWith(t, c.s, c.s.adminKey, "DELETE", "/v1/templates/tpl", nil, "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "n2") {
		t.Errorf("delete while n2 is down: %d %s", code, body)
	}
	n2.start()
	waitNode(t, admin, "n2", "ready", 20*time.Second)
	if got := must[client.Template](t)(admin.Template(ctx, "tpl")); !slices.Equal(got.Nodes, []string{"n1", "n2"}) {
		t.Errorf("tpl after a refused delete: on %v", got.Nodes)
	}
	for _, n := range []string{"tpl", "img", "conc"} {
		if err := admin.DeleteTemplate(ctx, n); err != nil {
			t.Fatalf("delete %s: %v", n, err)
		}
		if _, err := admin.Template(ctx, n); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("%s after its delete: %v", n, err)
		}
		for node, np := range c.nodes {
			if _, err := os.Lstat(filepath.Join(np.dataDir, "templates", n)); err == nil {
				t.Errorf("%s is still on %s", n, node)
			}
		}
	}
	if _, err := admin.CreateSandbox(ctx, client.CreateRequest{Template: "tpl"}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("a create from the deleted template: %v", err)
	}
}
