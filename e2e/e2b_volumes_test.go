package e2e

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/images/imagetest"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestE2BNodeVolumes drives volumes and a template built from an image
// through the E2B facade with the unmodified e2b npm SDK
// (e2bnode/volumes.mjs): a file written on a volume by one sandbox is read
// by the next that mounts it, the volume content API is refused, and
// Template.build(Template().fromImage(...)) imports an image from a
// registry on loopback (opened to the server with --egress-allow-private)
// that a tenant's sandbox then runs on. Airlock's own API must agree: the
// sandboxes mounted the volume, the volume is gone, the template is the
// image's, nothing is left running.
func TestE2BNodeVolumes(t *testing.T) {
	node, dir := nodeProject(t, "e2bnode", "e2b", "the E2B SDK test")
	if v, err := exec.Command(node, "-p", "process.versions.node").Output(); err != nil || !nodeAtLeast(strings.TrimSpace(string(v)), 20, 18, 1) {
		linuxtest.Lacking(t, "the E2B SDK test", fmt.Sprintf("the e2b SDK needs node >= 20.18.1, found %q (%v)", strings.TrimSpace(string(v)), err))
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	ref, err := name.ParseReference(reg.Listener.Addr().String()+"/test/img:latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, imagetest.Image(t)); err != nil {
		t.Fatal(err)
	}

	s := startServer(t, "", "--egress-allow-private", "127.0.0.1/32")
	admin := s.admin()
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "e2b-volumes"}))
	key := must[client.NewKey](t)(admin.CreateKey(ctx, "e2b-volumes", "node")).Key
	c := client.New(s.url, key)

	cmd := exec.Command(node, "volumes.mjs", s.url, key, s.adminKey, ref.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HTTPS_PROXY=", "HTTP_PROXY=", "https_proxy=", "http_proxy=")
	out := runNode(t, cmd, 4*time.Minute)

	var ids []string
	var volume, template string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "SANDBOX "); ok {
			ids = append(ids, strings.TrimSpace(rest))
		}
		if rest, ok := strings.CutPrefix(line, "VOLUME "); ok {
			volume = strings.TrimSpace(rest)
		}
		if rest, ok := strings.CutPrefix(line, "TEMPLATE "); ok {
			template = strings.TrimSpace(rest)
		}
	}
	if len(ids) != 3 || volume == "" || template == "" {
		t.Fatalf("volumes.mjs printed sandboxes %v, volume %q, template %q", ids, volume, template)
	}
	for i, want := range []string{"/mnt/data", "/mnt/other", ""} {
		sb := must[client.Sandbox](t)(c.GetSandbox(ctx, ids[i]))
		var got string
		if len(sb.Volumes) == 1 && sb.Volumes[0].Name == volume && !sb.Volumes[0].ReadOnly {
			got = sb.Volumes[0].Path
		}
		if sb.State != client.StateStopped || got != want || len(sb.Volumes) > 1 {
			t.Errorf("sandbox %s in Airlock's API: state %q, volumes %+v; want stopped, %s read-write at %q", sb.ID, sb.State, sb.Volumes, volume, want)
		}
	}
	if vols := must[[]client.Volume](t)(c.ListVolumes(ctx)); len(vols) != 0 {
		t.Errorf("volumes left: %+v", vols)
	}
	tmpl := must[client.Template](t)(c.Template(ctx, template))
	if tmpl.From != "image" || tmpl.Image != ref.String() || !strings.HasPrefix(tmpl.Digest, "sha256:") {
		t.Errorf("template %s in Airlock's API: %+v, want the image %s", template, tmpl, ref)
	}
	if sb := must[client.Sandbox](t)(c.GetSandbox(ctx, ids[2])); sb.Template != template {
		t.Errorf("the last sandbox's template: %q, want %q", sb.Template, template)
	}
	// The refused second mount may have left a failed record: running,
	// paused or creating is what must not be left.
	page := must[client.Page](t)(c.ListSandboxes(ctx, client.ListOptions{}))
	for _, sb := range page.Sandboxes {
		if sb.State == client.StateRunning || sb.State == client.StatePaused || sb.State == client.StateCreating {
			t.Errorf("sandbox %s left %s", sb.ID, sb.State)
		}
	}
	if err := admin.DeleteTemplate(ctx, template); err != nil {
		t.Errorf("delete template %s: %v", template, err)
	}
}
