package e2e

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/images/imagetest"
)

// TestLifecycleCLI: pause, resume, snapshots, forks, volumes and an image
// template, as a person drives them with the CLI on the default server.
func TestLifecycleCLI(t *testing.T) {
	s := startServer(t, "")
	k := s.adminKey
	cli := func(args ...string) string {
		t.Helper()
		out, code := s.cli(k, args...)
		if code != 0 {
			t.Fatalf("airlock %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return strings.TrimSpace(out)
	}
	id := cli("create", "--auto-resume")
	cli("exec", id, "--", "sh", "-c", "echo kept > f")
	if out := cli("pause", id); !strings.Contains(out, "paused") {
		t.Errorf("pause: %q", out)
	}
	// auto_resume: the exec resumes it.
	if out := cli("exec", id, "--", "cat", "f"); out != "kept" {
		t.Errorf("exec on an auto_resume sandbox: %q", out)
	}
	plain := cli("create")
	cli("pause", plain)
	if out, code := s.cli(k, "exec", plain, "--", "true"); code == 0 || !strings.Contains(out, "paused") {
		t.Errorf("exec while paused: %d %q", code, out)
	}
	if out := cli("resume", plain); !strings.Contains(out, "running") {
		t.Errorf("resume: %q", out)
	}
	if out, code := s.cli(k, "pause", "sb-nope"); code == 0 || !strings.Contains(out, "not found") {
		t.Errorf("pause of an unknown sandbox: %d %q", code, out)
	}

	cli("snapshot", "create", "--name", "s1", id)
	if out := cli("snapshot", "ls"); !strings.Contains(out, "s1") || !strings.Contains(out, id) {
		t.Errorf("snapshot ls: %q", out)
	}
	from := cli("create", "--snapshot", "s1")
	if out := cli("exec", from, "--", "cat", "f"); out != "kept" {
		t.Errorf("from the snapshot: %q", out)
	}
	forks := strings.Fields(cli("fork", "-n", "2", id))
	if len(forks) != 2 {
		t.Fatalf("fork -n 2 printed %v", forks)
	}
	for _, f := range forks {
		if out := cli("exec", f, "--", "cat", "f"); out != "kept" {
			t.Errorf("fork %s: %q", f, out)
		}
	}
	cli("snapshot", "rm", "s1")
	if out, code := s.cli(k, "snapshot", "rm", "s1"); code == 0 || !strings.Contains(out, "not found") {
		t.Errorf("snapshot rm twice: %d %q", code, out)
	}

	cli("volume", "create", "--size-mb", "32", "v1")
	w := cli("create", "--volume", "v1:/mnt/v")
	cli("exec", w, "--", "sh", "-c", "echo on-volume > /mnt/v/x")
	if out, code := s.cli(k, "volume", "rm", "v1"); code == 0 || !strings.Contains(out, "mounted") {
		t.Errorf("volume rm while mounted: %d %q", code, out)
	}
	cli("rm", w)
	r := cli("create", "--volume", "v1:/mnt/v:ro")
	if out := cli("exec", r, "--", "cat", "/mnt/v/x"); out != "on-volume" {
		t.Errorf("volume in the next sandbox: %q", out)
	}
	cli("rm", r)
	cli("volume", "rm", "v1")
	if out, code := s.cli(k, "create", "--volume", "nope"); code != 2 || !strings.Contains(out, "NAME:PATH") {
		t.Errorf("create --volume nope: %d %q", code, out)
	}

	// An image template from a docker save tarball.
	file := filepath.Join(t.TempDir(), "img.tar")
	ref, _ := name.ParseReference("test/img:latest")
	if err := tarball.WriteToFile(file, ref, imagetest.Image(t)); err != nil {
		t.Fatal(err)
	}
	out, code := s.cli(k, "template", "import", "img", file)
	if code != 0 || !strings.Contains(out, "layer 2/2") {
		t.Fatalf("template import: %d %q", code, out)
	}
	onImg := cli("create", "--template", "img")
	if out := cli("exec", onImg, "--", "cat", "/etc/os-release"); out != "ID=testimage" {
		t.Errorf("sandbox on the image: %q", out)
	}
	if out, code := s.cli(k, "template", "import", "img2", "127.0.0.1:1/x/y:z"); code == 0 || !strings.Contains(out, "127.0.0.1") {
		t.Errorf("import from a loopback registry the operator did not open: %d %q", code, out)
	}
}

// TestLifecycleOnNodes: on a control plane with two nodes, pause and
// snapshots work on whichever node runs the sandbox; sandboxes from a
// snapshot and forks land on its node; a volume's sandboxes land on the
// volume's node.
func TestLifecycleOnNodes(t *testing.T) {
	c := startCluster(t, "n1", "n2")
	admin := c.admin
	sb := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Timeout: 10 * time.Minute}))
	must[client.ExecResult](t)(admin.Exec(ctx, sb.ID, client.ExecRequest{Command: "echo kept > f"}))
	if p := must[client.Sandbox](t)(admin.PauseSandbox(ctx, sb.ID)); p.State != client.StatePaused {
		t.Errorf("pause on %s: %s", sb.Node, p.State)
	}
	if _, err := admin.Exec(ctx, sb.ID, client.ExecRequest{Command: "true"}); !errors.Is(err, client.ErrPaused) || !errors.Is(err, client.ErrConflict) {
		t.Errorf("exec while paused on a node: %v", err)
	}
	must[client.Sandbox](t)(admin.ResumeSandbox(ctx, sb.ID))
	snap := must[client.Snapshot](t)(admin.CreateSnapshot(ctx, sb.ID, "on-node"))
	if snap.Node != sb.Node {
		t.Errorf("snapshot on %s of a sandbox on %s", snap.Node, sb.Node)
	}
	for range 3 {
		from := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Snapshot: "on-node"}))
		if from.Node != sb.Node {
			t.Errorf("a sandbox from the snapshot on %s, the snapshot on %s", from.Node, sb.Node)
		}
		if r := must[client.ExecResult](t)(admin.Exec(ctx, from.ID, client.ExecRequest{Command: "cat f"})); r.Stdout != "kept\n" {
			t.Errorf("from the snapshot: %+v", r)
		}
	}
	// Its node draining, a sandbox from the snapshot goes to the other,
	// the snapshot streamed there, and says so.
	if _, err := admin.DrainNode(ctx, sb.Node, true); err != nil {
		t.Fatal(err)
	}
	waitNode(t, admin, sb.Node, "draining", 5*time.Second)
	moved := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Snapshot: "on-node"}))
	tr := moved.SnapshotTransfer
	if moved.Node == sb.Node || tr == nil || tr.From != sb.Node || tr.To != moved.Node || tr.Bytes < 1024 {
		t.Errorf("from the snapshot while its node drains: on %s, transfer %+v", moved.Node, tr)
	}
	if r := must[client.ExecResult](t)(admin.Exec(ctx, moved.ID, client.ExecRequest{Command: "cat f; whoami"})); r.Stdout != "kept\nuser\n" {
		t.Errorf("from the streamed snapshot: %+v", r)
	}
	if _, err := admin.DrainNode(ctx, sb.Node, false); err != nil {
		t.Fatal(err)
	}
	waitNode(t, admin, sb.Node, "ready", 5*time.Second)
	for _, f := range must[[]client.Sandbox](t)(admin.ForkSandbox(ctx, sb.ID, client.ForkRequest{Count: 2})) {
		if f.Node != sb.Node {
			t.Errorf("fork on %s, parent on %s", f.Node, sb.Node)
		}
	}
	other := "n1"
	if sb.Node == "n1" {
		other = "n2"
	}
	must[client.Volume](t)(admin.CreateVolume(ctx, "vol", 32, other))
	for range 2 {
		v := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Volumes: []client.VolumeMount{{Name: "vol", Path: "/mnt/v"}}}))
		if v.Node != other {
			t.Errorf("a sandbox with a volume on %s placed on %s", other, v.Node)
		}
		must[client.ExecResult](t)(admin.Exec(ctx, v.ID, client.ExecRequest{Command: "echo x >> /mnt/v/log"}))
		if err := admin.DeleteSandbox(ctx, v.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CreateSandbox(ctx, client.CreateRequest{Snapshot: "on-node", Volumes: []client.VolumeMount{{Name: "vol", Path: "/mnt/v"}}}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("a snapshot on one node and a volume on another: %v", err)
	}
	// Its node draining, the volume moves with the next sandbox that
	// mounts it, and keeps what was written.
	if _, err := admin.DrainNode(ctx, other, true); err != nil {
		t.Fatal(err)
	}
	waitNode(t, admin, other, "draining", 5*time.Second)
	v := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Volumes: []client.VolumeMount{{Name: "vol", Path: "/mnt/v"}}}))
	if v.Node == other || len(v.VolumeTransfers) != 1 || v.VolumeTransfers[0].Volume != "vol" || v.VolumeTransfers[0].From != other {
		t.Errorf("a sandbox with a volume on a draining node: on %s, moves %+v", v.Node, v.VolumeTransfers)
	}
	if r := must[client.ExecResult](t)(admin.Exec(ctx, v.ID, client.ExecRequest{Command: "cat /mnt/v/log; stat -c %U /mnt/v/log; echo y >> /mnt/v/log"})); r.Stdout != "x\nx\nuser\n" || r.ExitCode != 0 {
		t.Errorf("the moved volume: %+v", r)
	}
	if got := must[client.Volume](t)(admin.GetVolume(ctx, "vol")); got.Node != v.Node {
		t.Errorf("the volume is recorded on %s, its sandbox runs on %s", got.Node, v.Node)
	}
	if err := admin.DeleteSandbox(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.DrainNode(ctx, other, false); err != nil {
		t.Fatal(err)
	}
	// Now on the snapshot's node: one sandbox may have both.
	both := must[client.Sandbox](t)(admin.CreateSandbox(ctx, client.CreateRequest{Snapshot: "on-node", Volumes: []client.VolumeMount{{Name: "vol", Path: "/mnt/v"}}}))
	if r := must[client.ExecResult](t)(admin.Exec(ctx, both.ID, client.ExecRequest{Command: "cat f /mnt/v/log"})); r.Stdout != "kept\nx\nx\ny\n" {
		t.Errorf("a snapshot and a volume: %+v", r)
	}
	must[struct{}](t)(struct{}{}, admin.DeleteSandbox(ctx, both.ID))
	must[struct{}](t)(struct{}{}, admin.DeleteSnapshot(ctx, "on-node"))
	must[struct{}](t)(struct{}{}, admin.DeleteVolume(ctx, "vol"))
}
