package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/images/imagetest"
)

// volumesShots are the pages volumes.mjs must have photographed, in order.
var volumesShots = []string{"volumes", "create-form-volume", "sandbox-with-volume", "delete-mounted",
	"template-imported", "template-refused", "narrow-volumes", "narrow-templates"}

// TestConsoleVolumes drives volumes and image imports through the web
// console in Debian's headless Chromium (e2e/consolenode/volumes.mjs):
// create a volume, create a sandbox that mounts it with pause options
// from the New sandbox form, be refused deleting the mounted volume (the
// dialog naming the sandbox), delete it once the sandbox is gone, upload a
// `docker save` tarball under Templates with each layer's progress shown,
// and see a pull from a closed registry fail with the server's words.
// Here, through the API: the sandbox mounted the volume read-write with
// those options, the volume is gone, and a sandbox on the imported
// template runs the image's own files.
func TestConsoleVolumes(t *testing.T) {
	node, dir, chromium, shots := browserTest(t, "the console volumes browser test", "volumes")

	s := startServer(t, "")
	admin := s.admin()
	t.Cleanup(func() { destroyEverything(t, admin) })
	// A volume or template a failed run leaves goes with the data dir.
	const volume, tmpl = "console-vol", "console-img"
	file := filepath.Join(t.TempDir(), "img.tar")
	ref, _ := name.ParseReference("test/console-img:latest")
	if err := tarball.WriteToFile(file, ref, imagetest.Image(t)); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(node, "volumes.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AIRLOCK_URL="+s.url, "AIRLOCK_KEY="+s.adminKey, "AIRLOCK_VOLUME="+volume,
		"AIRLOCK_TARBALL="+file, "AIRLOCK_TEMPLATE="+tmpl, "AIRLOCK_SCREENSHOTS="+shots, "AIRLOCK_CHROMIUM="+chromium,
		"HTTPS_PROXY=", "HTTP_PROXY=", "https_proxy=", "http_proxy=", "NO_PROXY=*")
	out := runNode(t, cmd, 5*time.Minute)
	var id string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "SANDBOX "); ok {
			id = strings.TrimSpace(v)
		}
	}
	if id == "" {
		t.Fatalf("volumes.mjs printed no SANDBOX line")
	}

	// What the browser did, seen through the API.
	sb := must[client.Sandbox](t)(admin.GetSandbox(ctx, id))
	want := []client.VolumeMount{{Name: volume, Path: "/mnt/console-data"}}
	if fmt.Sprint(sb.Volumes) != fmt.Sprint(want) || !sb.AutoResume || sb.IdleAction != "pause" || sb.IdleTimeoutS != 600 || sb.MaxPausedS != 7200 {
		t.Errorf("sandbox made in the browser: volumes %+v, auto_resume %v, idle %q after %d s, max paused %d s; want %+v, true, pause after 600 s, 7200 s",
			sb.Volumes, sb.AutoResume, sb.IdleAction, sb.IdleTimeoutS, sb.MaxPausedS, want)
	}
	if sb.State != client.StateStopped {
		t.Errorf("sandbox %s: state %q, want stopped (destroyed before its volume was deleted)", id, sb.State)
	}
	if vols := must[[]client.Volume](t)(admin.ListVolumes(ctx)); len(vols) != 0 {
		t.Errorf("volumes after Delete in the browser: %+v, want none", vols)
	}
	tp := must[client.Template](t)(admin.Template(ctx, tmpl))
	if tp.From != "image" || !strings.HasPrefix(tp.Digest, "sha256:") || tp.Description != "imported in the console test" {
		t.Errorf("template imported in the browser: %+v, want from image, a digest, the description typed", tp)
	}
	on := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Template: tmpl, Timeout: 5 * time.Minute}))
	if r := must[client.ExecResult](t)(admin.Exec(ctx, on.ID, client.ExecRequest{Cmd: []string{"cat", "/etc/os-release"}})); r.Stdout != "ID=testimage\n" {
		t.Errorf("a sandbox on the uploaded image reads /etc/os-release as %q (exit %d), want the image's", r.Stdout, r.ExitCode)
	}
	for _, t2 := range must[[]client.Template](t)(admin.Templates(ctx)) {
		if t2.Name == tmpl+"-2" {
			t.Errorf("the import refused in the browser made template %+v", t2)
		}
	}
	for i, n := range volumesShots {
		f := filepath.Join(shots, fmt.Sprintf("%02d-%s.png", i+1, n))
		if fi, err := os.Stat(f); err != nil || fi.Size() < 10<<10 {
			t.Errorf("screenshot %s: %v (a page worth looking at is more than 10 KiB)", f, err)
		}
	}

	if err := admin.DeleteSandbox(ctx, on.ID); err != nil {
		t.Errorf("destroy %s: %v", on.ID, err)
	}
	assertNoSandboxesLeft(t, s, id, on.ID)
}
