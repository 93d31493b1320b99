package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestSandboxDoesNotPinHostMounts pins the cause of TestBtrfsRestart's
// failures beside a running server: every sandbox kept alive each mount the
// host had when it was cloned (its init's executable lay in its copy of
// the host's mounts, which pinned that copy's root and every mount locked
// to it), so a filesystem unmounted on the host lived on, its loop device
// attached, until the sandbox ended. Now it goes at the unmount.
func TestSandboxDoesNotPinHostMounts(t *testing.T) {
	testRuntime(t)
	mkfs := testenv.LookPath(t, "mkfs.ext4", "e2fsprogs")
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("truncate", "-s", "16M", img).CombinedOutput(); err != nil {
		t.Fatalf("truncate: %v %s", err, out)
	}
	if out, err := exec.Command(mkfs, "-q", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs: %v %s", err, out)
	}
	// mount -o loop sets the loop device to detach itself once the
	// filesystem is released.
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v %s", err, out)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			exec.Command("umount", "-l", mnt).Run()
		}
	})
	sb := newSandbox(t, runtime.Limits{}) // cloned while the image is mounted
	if r := sh(t, sb, "echo up"); r.stdout != "up\n" || r.st.Code != 0 {
		t.Fatalf("sandbox: %+v", r)
	}
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount on the host: %v %s", err, out)
	}
	mounted = false
	for deadline := time.Now().Add(3 * time.Second); loopHolds(img); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sandbox keeps a filesystem the host unmounted alive (its loop device is still attached)")
		}
	}
}

// loopHolds says whether a loop device is attached to img.
func loopHolds(img string) bool {
	backing, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, b := range backing {
		if f, _ := os.ReadFile(b); strings.TrimSuffix(strings.TrimSpace(string(f)), " (deleted)") == img {
			return true
		}
	}
	return false
}
