package sandbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// TestVolumes: what one sandbox writes to a volume is there for the
// next; a second read-write mount is refused; a read-only mount refuses
// writes; the volume's own disk limit holds; a mounted volume cannot be
// deleted; another tenant cannot see or mount it.
func TestVolumes(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	vol, err := svc.CreateVolume(ctx, c, sandbox.VolumeRequest{Name: "data", SizeMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	if vol.Name != "data" || vol.SizeMB != 64 || vol.Node != "local" {
		t.Errorf("volume: %+v", vol)
	}
	if _, err := svc.CreateVolume(ctx, c, sandbox.VolumeRequest{Name: "data", SizeMB: 64}); err == nil {
		t.Error("a second volume data was made")
	}
	rw := []sandbox.VolumeMount{{Name: "data", Path: "/mnt/data"}}
	first := create(t, svc, c, sandbox.CreateRequest{Volumes: rw})
	if res := run(t, svc, c, first.ID, `echo kept > /mnt/data/f && mkdir /mnt/data/d && stat -c %U /mnt/data/f`); res.ExitCode != 0 || res.Stdout != "user\n" {
		t.Fatalf("write to the volume: %+v", res)
	}
	// Through the files API too.
	var sb strings.Builder
	if _, err := svc.ReadFile(ctx, c, first.ID, "/mnt/data/f", &sb); err != nil || sb.String() != "kept\n" {
		t.Errorf("files API read: %q, %v", sb.String(), err)
	}
	_, err = svc.Create(ctx, c, sandbox.CreateRequest{Volumes: rw})
	wantKind(t, "second read-write mount", err, sandbox.ErrConflict)
	wantKind(t, "delete a mounted volume", svc.DeleteVolume(ctx, c, "data"), sandbox.ErrConflict)
	// The volume's limit, not the sandbox's disk.
	if res := run(t, svc, c, first.ID, `head -c 100M /dev/zero > /mnt/data/big; echo $?`); !strings.HasSuffix(res.Stdout, "1\n") {
		t.Errorf("100 MiB into a 64 MiB volume: %+v", res)
	}
	run(t, svc, c, first.ID, "rm -f /mnt/data/big")
	if err := svc.Delete(ctx, c, first.ID); err != nil {
		t.Fatal(err)
	}

	// The next sandbox (another uid range) finds the data, as its own.
	ro := []sandbox.VolumeMount{{Name: "data", Path: "/mnt/data", ReadOnly: true}}
	r1 := create(t, svc, c, sandbox.CreateRequest{Volumes: ro})
	r2 := create(t, svc, c, sandbox.CreateRequest{Volumes: ro})
	for _, id := range []string{r1.ID, r2.ID} {
		// Each of two read-only mounts at once sees the files as its own.
		if res := run(t, svc, c, id, `cat /mnt/data/f; stat -c %U /mnt/data/f; echo x > /mnt/data/g 2>/dev/null || echo refused`); res.Stdout != "kept\nuser\nrefused\n" {
			t.Errorf("read-only mount in %s: %q", id, res.Stdout)
		}
	}
	_, err = svc.Create(ctx, c, sandbox.CreateRequest{Volumes: rw})
	wantKind(t, "read-write beside read-only mounts", err, sandbox.ErrConflict)

	other := tenant(t, 0, 0)
	_, err = svc.Create(ctx, other, sandbox.CreateRequest{Volumes: rw})
	wantKind(t, "another tenant's volume", err, sandbox.ErrNotFound)
	for _, bad := range []string{"relative", "/", "/proc/x", "/tmp/x", "/usr/local"} {
		_, err = svc.Create(ctx, c, sandbox.CreateRequest{Volumes: []sandbox.VolumeMount{{Name: "data", Path: bad}}})
		wantKind(t, "mount at "+bad, err, sandbox.ErrInvalid)
	}
	for _, id := range []string{r1.ID, r2.ID} {
		if err := svc.Delete(ctx, c, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.DeleteVolume(ctx, c, "data"); err != nil {
		t.Fatal(err)
	}
	if l, _ := svc.Volumes(ctx, c); len(l) != 0 {
		t.Errorf("after delete: %+v", l)
	}
}
