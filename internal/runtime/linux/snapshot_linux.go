package linux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/quota"
)

// A snapshot is a copy of a sandbox's whole directory in the disk pool, at
// .snapshots/NAME: on btrfs a subvolume snapshot of the sandbox's
// subvolume (copy-on-write, milliseconds whatever its size), elsewhere a
// copy of the tree. Of it only upper/ (the writable layer: the workspace
// and everything written outside it) and state.json (its template and uid
// range) are used: a sandbox made from it gets a snapshot of the snapshot
// as its own directory, with everything else made fresh.

var _ runtime.Snapshotter = (*Runtime)(nil)

func (r *Runtime) snapshotsDir() string { return filepath.Join(r.sandboxesDir(), ".snapshots") }

// snapshotPath is where snapshot name lives, after checking the name.
func (r *Runtime) snapshotPath(name string) (string, error) {
	if !validID(name) {
		return "", fmt.Errorf("%w: snapshot name %q must be 1-63 of [a-z0-9-]", runtime.ErrInvalid, name)
	}
	if r.quota == nil {
		return "", fmt.Errorf("%w: snapshots need the disk pool (%v)", runtime.ErrUnsupported, r.quotaErr)
	}
	return filepath.Join(r.snapshotsDir(), name), nil
}

// Snapshot saves the writable layer of sandbox id as name. The sandbox is
// frozen while the snapshot is taken, so no file is caught half written,
// and runs again after (a paused one stays paused).
func (r *Runtime) Snapshot(ctx context.Context, id, name string) (int64, error) {
	dst, err := r.snapshotPath(name)
	if err != nil {
		return 0, err
	}
	rsb, err := r.Get(ctx, id)
	if err != nil {
		return 0, err
	}
	sb := rsb.(*sandbox)
	if sb.p.Build {
		return 0, fmt.Errorf("%w: sandbox %s is a template build: commit it as a template instead", runtime.ErrInvalid, id)
	}
	if err := os.MkdirAll(r.snapshotsDir(), 0o700); err != nil {
		return 0, fmt.Errorf("snapshot %s: %w", name, err)
	}
	if _, err := os.Lstat(dst); err == nil {
		return 0, fmt.Errorf("%w: snapshot %s", runtime.ErrConflict, name)
	}
	// Write out what the sandbox wrote so far while it still runs: the
	// snapshot then only has to flush what is written from here on, and
	// the sandbox stays frozen for the snapshot alone.
	if d, err := os.Open(sb.dir); err == nil {
		unix.Syncfs(int(d.Fd()))
		d.Close()
	}
	if !sb.frozen() {
		end := r.phase("snapshot: freeze")
		err := sb.Pause(ctx)
		end()
		if err != nil {
			return 0, err
		}
		defer sb.Resume(context.WithoutCancel(ctx))
	}
	end := r.phase("snapshot: copy layer")
	err = r.quota.Snapshot(sb.dir, dst)
	end()
	if err != nil {
		return 0, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	size, err := quota.DiskUsage(filepath.Join(dst, "upper"))
	if err != nil {
		r.quota.RemoveSnapshot(dst)
		return 0, fmt.Errorf("snapshot sandbox %s: size: %w", id, err)
	}
	return size, nil
}

// DeleteSnapshot removes snapshot name.
func (r *Runtime) DeleteSnapshot(ctx context.Context, name string) error {
	p, err := r.snapshotPath(name)
	if err != nil {
		return err
	}
	// A transfer given up leaves its spool.
	os.Remove(filepath.Join(r.snapshotsDir(), ".incoming-"+name+".tar"))
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := r.quota.RemoveSnapshot(p); err != nil {
		return fmt.Errorf("delete snapshot %s: %w", name, err)
	}
	r.collectTemplates()
	return nil
}

// snapshotState reads what a snapshot's sandbox was: its template and uid
// range.
func (r *Runtime) snapshotState(name string) (persisted, error) {
	p, err := r.snapshotPath(name)
	if err != nil {
		return persisted{}, err
	}
	b, err := os.ReadFile(filepath.Join(p, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return persisted{}, fmt.Errorf("%w: snapshot %s", runtime.ErrNotFound, name)
	}
	if err != nil {
		return persisted{}, fmt.Errorf("snapshot %s: %w", name, err)
	}
	var st persisted
	if err := json.Unmarshal(b, &st); err != nil {
		return persisted{}, fmt.Errorf("snapshot %s: %w", name, err)
	}
	return st, nil
}

// fromSnapshot makes dir, which must not exist, the directory of a new
// sandbox limited to bytes whose writable layer is snapshot name's,
// owned by the uid range at hostUID.
func (r *Runtime) fromSnapshot(dir, name string, project uint32, bytes int64, hostUID int) error {
	st, err := r.snapshotState(name)
	if err != nil {
		return err
	}
	src, _ := r.snapshotPath(name)
	if err := r.quota.Snapshot(src, dir); err != nil {
		return fmt.Errorf("copy snapshot %s: %w", name, err)
	}
	if err := r.quota.Adopt(dir, project, bytes); err != nil {
		return fmt.Errorf("limit the copy of snapshot %s: %w", name, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	// Only the writable layer carries over: the rest is the old
	// sandbox's (its state, socket, log, overlay work dir).
	for _, e := range entries {
		if e.Name() != "upper" {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("copy snapshot %s: %w", name, err)
			}
		}
	}
	if from := st.owners(); (st.Slot >= 0 || st.Owners != nil) && from != hostUID {
		if err := quota.ShiftOwners(filepath.Join(dir, "upper"), from, hostUID, uidCount); err != nil {
			return fmt.Errorf("copy snapshot %s: %w", name, err)
		}
	}
	return nil
}

// DiskMode says how the disk pool keeps layers: "btrfs" (snapshots are
// copy-on-write), "project" or "image" (snapshots are copies), or why
// there is none.
func (r *Runtime) DiskMode() string {
	if r.quota == nil {
		return fmt.Sprintf("none (%v)", r.quotaErr)
	}
	return r.quota.Mode()
}
