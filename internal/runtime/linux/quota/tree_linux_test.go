package quota

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/testenv"
)

// owner is a file's uid, gid and mode bits.
type owner struct {
	UID, GID uint32
	Perm     uint32
}

func ownerOf(t *testing.T, path string) owner {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return owner{st.Uid, st.Gid, st.Mode & 0o7777}
}

func TestShiftOwners(t *testing.T) {
	testenv.RequiresRoot(t, "chown files to other users")
	const from, to, count = 100000, 200000, 65536
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(outside, 101000, 101000); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		kind       string // "file", "dir" or "symlink" (to outside the tree)
		have, want owner
	}{
		{"root", "file", owner{0, 0, 0o644}, owner{0, 0, 0o644}},
		{"sandbox-user", "file", owner{101000, 101000, 0o644}, owner{201000, 201000, 0o644}},
		{"first-id", "file", owner{from, from, 0o600}, owner{to, to, 0o600}},
		{"last-id", "file", owner{from + count - 1, from + count - 1, 0o600}, owner{to + count - 1, to + count - 1, 0o600}},
		{"past-range", "file", owner{from + count, from + count, 0o600}, owner{from + count, from + count, 0o600}},
		{"below-range", "file", owner{from - 1, 0, 0o600}, owner{from - 1, 0, 0o600}},
		{"uid-only", "file", owner{101000, 0, 0o644}, owner{201000, 0, 0o644}},
		{"setuid", "file", owner{101000, 101000, 0o4755}, owner{201000, 201000, 0o4755}},
		{"setgid", "file", owner{101000, 101000, 0o2755}, owner{201000, 201000, 0o2755}},
		{"setgid-dir", "dir", owner{101000, 101000, 0o2775}, owner{201000, 201000, 0o2775}},
		{"symlink", "symlink", owner{101000, 101000, 0o777}, owner{201000, 201000, 0o777}},
	}
	for _, c := range cases {
		p := filepath.Join(dir, "sub", c.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch c.kind {
		case "file":
			err = os.WriteFile(p, []byte("x"), 0o600)
		case "dir":
			err = os.Mkdir(p, 0o700)
		case "symlink":
			err = os.Symlink(outside, p)
		}
		if err == nil {
			err = os.Lchown(p, int(c.have.UID), int(c.have.GID))
		}
		if err == nil && c.kind != "symlink" {
			err = unix.Chmod(p, c.have.Perm)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ShiftOwners(dir, from, to, count); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got := ownerOf(t, filepath.Join(dir, "sub", c.name)); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if got, want := ownerOf(t, outside), (owner{101000, 101000, 0o644}); got != want {
		t.Errorf("target of a symlink in the tree: %+v, want it untouched %+v", got, want)
	}
}

// TestShiftOwnersOverlap shifts between overlapping ranges: a file with two
// links moves once, and a mount in the tree is left alone.
func TestShiftOwnersOverlap(t *testing.T) {
	testenv.RequiresRoot(t, "chown files and mount tmpfs")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	mnt := filepath.Join(dir, "mnt")
	if err := os.WriteFile(a, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(a, 101000, 101000); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	other := filepath.Join(mnt, "f")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other, 101000, 101000); err != nil {
		t.Fatal(err)
	}
	if err := ShiftOwners(dir, 100000, 100500, 65536); err != nil {
		t.Fatal(err)
	}
	got := map[string]owner{"a": ownerOf(t, a), "b": ownerOf(t, b), "mounted": ownerOf(t, other)}
	want := map[string]owner{
		"a":       {101500, 101500, 0o644},
		"b":       {101500, 101500, 0o644},
		"mounted": {101000, 101000, 0o644},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after shifting by 500 (-want +got):\n%s", diff)
	}
	if err := ShiftOwners(dir, -1, 0, 10); err == nil {
		t.Error("ShiftOwners accepted a negative id")
	}
}

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "sub", "big")
	if err := os.Mkdir(filepath.Dir(big), 0o755); err != nil {
		t.Fatal(err)
	}
	if n, err := fill(big, 50*mib); err != nil {
		t.Fatalf("wrote %d: %v", n, err)
	}
	if err := os.Link(big, filepath.Join(dir, "big-link")); err != nil {
		t.Fatal(err)
	}
	sparse, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sparse.WriteAt(make([]byte, 4096), 80*mib); err != nil {
		t.Fatal(err)
	}
	sparse.Close()
	if err := os.Symlink("sub/big", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	got, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("DiskUsage = %d bytes (%.2f MiB)", got, float64(got)/mib)
	// The file's 50 MiB once, the sparse file's 4 KiB, and the directories'
	// and symlink's blocks.
	if got < 50*mib || got > 50*mib+mib {
		t.Errorf("DiskUsage = %d, want 50 MiB and a little", got)
	}
	if _, err := DiskUsage(filepath.Join(dir, "none")); err == nil {
		t.Error("DiskUsage of a missing dir succeeded")
	}
}
