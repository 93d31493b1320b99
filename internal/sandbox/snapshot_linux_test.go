package sandbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// TestSnapshotAndFork: 1 GiB written into a workspace comes back byte for
// byte from a snapshot; ten forks each change a file without touching
// the parent or each other; the snapshot outlives its sandbox, counts in
// its tenant's storage and is another tenant's to see never.
func TestSnapshotAndFork(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	parent, err := svc.Create(ctx, c, sandbox.CreateRequest{DiskMB: 3072, Env: map[string]string{"ORIGIN": "parent"}})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, svc, c, parent.ID, `head -c 64M /dev/urandom > chunk && for i in $(seq 16); do cat chunk; done > big && rm chunk &&
		echo parent > f && mkdir -p /home/user/d && echo gone > /home/user/d/x && sha256sum big | cut -c1-64`)
	sum := strings.TrimSpace(res.Stdout)
	if res.ExitCode != 0 || len(sum) != 64 {
		t.Fatalf("write 1 GiB: %+v", res)
	}
	storage0, _ := shared.StorageBytes(ctx, c.TenantID)
	snap, err := svc.CreateSnapshot(ctx, c, parent.ID, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Name != "s1" || snap.Sandbox != parent.ID || snap.Template != "base" || snap.SizeBytes < 1<<30 {
		t.Errorf("snapshot: %+v", snap)
	}
	if n, _ := shared.StorageBytes(ctx, c.TenantID); n-storage0 < snap.SizeBytes {
		t.Errorf("tenant storage grew by %d, want the snapshot's %d", n-storage0, snap.SizeBytes)
	}
	if _, err := svc.CreateSnapshot(ctx, c, parent.ID, "s1"); err == nil {
		t.Error("a second snapshot s1 was taken")
	}
	// The parent runs on after its snapshot.
	if res := run(t, svc, c, parent.ID, "cat f"); res.Stdout != "parent\n" {
		t.Errorf("parent after snapshot: %+v", res)
	}

	start := time.Now()
	forks, err := svc.Fork(ctx, c, parent.ID, sandbox.ForkRequest{Count: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("10 forks of a 1 GiB workspace: %v", time.Since(start))
	for i, f := range forks {
		if f.State != sandboxrec.Running || f.Env["ORIGIN"] != "parent" || f.DiskMB != 3072 || sandbox.LifecycleOf(f).ForkOf != parent.ID {
			t.Errorf("fork %d: %+v", i, f)
		}
		run(t, svc, c, f.ID, fmt.Sprintf("echo fork%d > f", i))
	}
	for i, f := range forks {
		if res := run(t, svc, c, f.ID, "cat f; whoami; stat -c %U big; test -w big && echo writable"); res.Stdout != fmt.Sprintf("fork%d\nuser\nuser\nwritable\n", i) {
			t.Errorf("fork %d: %q", i, res.Stdout)
		}
		if err := svc.Delete(ctx, c, f.ID); err != nil {
			t.Error(err)
		}
	}
	if res := run(t, svc, c, parent.ID, "cat f"); res.Stdout != "parent\n" {
		t.Errorf("parent after its forks wrote: %q", res.Stdout)
	}

	// The snapshot outlives its sandbox.
	if err := svc.Delete(ctx, c, parent.ID); err != nil {
		t.Fatal(err)
	}
	child, err := svc.Create(ctx, c, sandbox.CreateRequest{Snapshot: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Delete(context.Background(), c, child.ID)
	if sandbox.LifecycleOf(child).Snapshot != "s1" {
		t.Errorf("child's lifecycle: %+v", sandbox.LifecycleOf(child))
	}
	if res := run(t, svc, c, child.ID, "sha256sum big | cut -c1-64; cat f d/x"); res.Stdout != sum+"\nparent\ngone\n" {
		t.Errorf("from the snapshot: %q, want %s, parent, gone", res.Stdout, sum)
	}

	other := tenant(t, 0, 0)
	_, err = svc.GetSnapshot(ctx, other, "s1")
	wantKind(t, "another tenant's snapshot", err, sandbox.ErrNotFound)
	_, err = svc.Create(ctx, other, sandbox.CreateRequest{Snapshot: "s1"})
	wantKind(t, "create from another tenant's snapshot", err, sandbox.ErrNotFound)
	wantKind(t, "delete another tenant's snapshot", svc.DeleteSnapshot(ctx, other, "s1"), sandbox.ErrNotFound)
	if l, err := svc.Snapshots(ctx, other); err != nil || len(l) != 0 {
		t.Errorf("another tenant lists %v, %v", l, err)
	}

	if err := svc.DeleteSnapshot(ctx, c, "s1"); err != nil {
		t.Fatal(err)
	}
	if n, _ := shared.StorageBytes(ctx, c.TenantID); n >= storage0+snap.SizeBytes {
		t.Errorf("tenant storage %d after delete, was %d before the snapshot", n, storage0)
	}
	_, err = svc.Create(ctx, c, sandbox.CreateRequest{Snapshot: "s1"})
	wantKind(t, "create from a deleted snapshot", err, sandbox.ErrNotFound)
}

// TestSnapshotOfPausedStaysPaused: a paused sandbox can be snapshotted and
// forked, and stays paused.
func TestSnapshotOfPausedStaysPaused(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	sb := create(t, svc, c, sandbox.CreateRequest{})
	run(t, svc, c, sb.ID, "echo hello > f")
	if _, err := svc.Pause(ctx, c, sb.ID); err != nil {
		t.Fatal(err)
	}
	forks, err := svc.Fork(ctx, c, sb.ID, sandbox.ForkRequest{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Delete(ctx, c, forks[0].ID)
	if res := run(t, svc, c, forks[0].ID, "cat f"); res.Stdout != "hello\n" {
		t.Errorf("fork of a paused sandbox: %+v", res)
	}
	if rec, _ := shared.GetSandbox(ctx, sb.ID); rec.State != sandboxrec.Paused {
		t.Errorf("parent after fork: %s, want paused", rec.State)
	}
	_, err = svc.Fork(ctx, c, sb.ID, sandbox.ForkRequest{Count: 0})
	wantKind(t, "fork of 0", err, sandbox.ErrInvalid)
	_, err = svc.CreateSnapshot(ctx, c, sb.ID, "../x")
	wantKind(t, "snapshot named ../x", err, sandbox.ErrInvalid)
}
