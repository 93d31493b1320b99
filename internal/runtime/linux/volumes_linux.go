package linux

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/quota"
	"github.com/airlockhq/airlock/internal/runtime/linux/sbinit"
)

// A volume is a directory of the disk pool, .vol-NAME, limited like a
// sandbox's layer (a subvolume with its own qgroup on btrfs), with its
// record .vol-NAME.json beside it. Its files belong to the uid range of
// the sandbox that last mounted it: a mount shifts them to the new
// sandbox's range when no other sandbox holds the volume (one read-write
// mount at a time, or any number of read-only ones: a read-only mount
// beside another sees the files as the other's, read by their mode bits).

var _ runtime.Volumer = (*Runtime)(nil)

// volumeRecord is .vol-NAME.json.
type volumeRecord struct {
	Project uint32 `json:"project"`
	SizeMB  int64  `json:"size_mb"`
	// Owner is the host uid the files' range starts at, -1 before the
	// first mount.
	Owner int `json:"owner"`
}

func (r *Runtime) volumePath(name string) (string, error) {
	if !validID(name) {
		return "", fmt.Errorf("%w: volume name %q must be 1-63 of [a-z0-9-]", runtime.ErrInvalid, name)
	}
	if r.quota == nil || r.rootless {
		return "", fmt.Errorf("%w: volumes need the disk pool (%v)", runtime.ErrUnsupported, r.quotaErr)
	}
	return filepath.Join(r.sandboxesDir(), ".vol-"+name), nil
}

// CreateVolume makes an empty volume limited to sizeMB.
func (r *Runtime) CreateVolume(ctx context.Context, name string, sizeMB int64) error {
	dir, err := r.volumePath(name)
	if err != nil {
		return err
	}
	if sizeMB < runtime.MinDiskMB {
		return fmt.Errorf("%w: volume size %d MiB: want at least %d", runtime.ErrInvalid, sizeMB, runtime.MinDiskMB)
	}
	r.volMu.Lock()
	defer r.volMu.Unlock()
	if err := os.Mkdir(dir, 0o711); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: volume %s", runtime.ErrConflict, name)
		}
		return fmt.Errorf("create volume %s: %w", name, err)
	}
	rec := volumeRecord{Project: volumeProject(), SizeMB: sizeMB, Owner: -1}
	err = r.quota.Limit(dir, rec.Project, sizeMB<<20)
	if err == nil {
		err = r.saveVolume(name, rec)
	}
	if err != nil {
		r.quota.Clear(rec.Project)
		removeLayer(dir)
		return fmt.Errorf("create volume %s: %w", name, err)
	}
	return nil
}

// volumeProject is a project id for a volume's limit: from a range no
// sandbox's (its uid slot + 1) reaches, at random, so two data dirs on
// one host do not pick the same.
func volumeProject() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return 1<<24 + binary.LittleEndian.Uint32(b[:])%(1<<30)
}

func (r *Runtime) volumeRecordPath(name string) string {
	return filepath.Join(r.sandboxesDir(), ".vol-"+name+".json")
}

func (r *Runtime) loadVolume(name string) (volumeRecord, error) {
	b, err := os.ReadFile(r.volumeRecordPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return volumeRecord{}, fmt.Errorf("%w: volume %s", runtime.ErrNotFound, name)
	}
	if err != nil {
		return volumeRecord{}, err
	}
	var rec volumeRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return volumeRecord{}, fmt.Errorf("volume %s: %w", name, err)
	}
	return rec, nil
}

func (r *Runtime) saveVolume(name string, rec volumeRecord) error {
	b, _ := json.Marshal(rec)
	tmp := r.volumeRecordPath(name) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, r.volumeRecordPath(name))
}

// DeleteVolume removes a volume no live sandbox mounts.
func (r *Runtime) DeleteVolume(ctx context.Context, name string) error {
	dir, err := r.volumePath(name)
	if err != nil {
		return err
	}
	r.volMu.Lock()
	defer r.volMu.Unlock()
	rec, err := r.loadVolume(name)
	if errors.Is(err, runtime.ErrNotFound) {
		os.Remove(filepath.Join(r.sandboxesDir(), ".vol-"+name+".incoming.tar"))
		return nil
	}
	if err != nil {
		return err
	}
	if users := r.volumeUsers(name, ""); len(users) > 0 {
		return fmt.Errorf("%w: volume %s is mounted by %d sandboxes", runtime.ErrConflict, name, len(users))
	}
	os.Remove(filepath.Join(r.sandboxesDir(), ".vol-"+name+".incoming.tar"))
	if err := r.quota.Clear(rec.Project); err != nil {
		return fmt.Errorf("delete volume %s: %w", name, err)
	}
	if err := removeLayer(dir); err != nil {
		return fmt.Errorf("delete volume %s: %w", name, err)
	}
	return os.Remove(r.volumeRecordPath(name))
}

// volumeUsers are the live sandboxes (by directory name) that mount
// volume name, other than skip, and whether each mounts it read-write.
func (r *Runtime) volumeUsers(name, skip string) map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir(r.sandboxesDir())
	for _, e := range entries {
		if e.Name() == skip || !e.IsDir() || e.Name()[0] == '.' {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.sandboxesDir(), e.Name(), stateFile))
		if err != nil {
			continue
		}
		var p persisted
		if json.Unmarshal(b, &p) != nil {
			continue
		}
		// Being created (no init yet) by this process counts: its mounts
		// are decided.
		dir := filepath.Join(r.sandboxesDir(), e.Name())
		if !(p.Pid > 0 && procAlive(p.Pid, p.Start) || p.Pid == 0 && creating.has(dir)) {
			continue
		}
		for _, v := range p.Volumes {
			if v.Name == name {
				out[e.Name()] = out[e.Name()] || !v.ReadOnly
			}
		}
	}
	return out
}

// mountVolumes checks that sandbox name may mount vols and gives each
// volume's files the range at hostUID where no other sandbox holds it.
func (r *Runtime) mountVolumes(name string, vols []runtime.VolumeMount, hostUID int) ([]sbinit.VolumeBind, error) {
	if len(vols) == 0 {
		return nil, nil
	}
	r.volMu.Lock()
	defer r.volMu.Unlock()
	var out []sbinit.VolumeBind
	for _, v := range vols {
		dir, err := r.volumePath(v.Name)
		if err != nil {
			return nil, err
		}
		rec, err := r.loadVolume(v.Name)
		if err != nil {
			return nil, err
		}
		users := r.volumeUsers(v.Name, name)
		for _, rw := range users {
			if rw || !v.ReadOnly {
				return nil, fmt.Errorf("%w: volume %s is mounted read-write by another sandbox (one read-write mount at a time, or many read-only)", runtime.ErrConflict, v.Name)
			}
		}
		if len(users) == 0 && rec.Owner != hostUID {
			if rec.Owner < 0 {
				// A fresh volume: its root is the sandbox user's.
				err = os.Lchown(dir, hostUID+sandboxUID, hostUID+sandboxUID)
			} else {
				err = quota.ShiftOwners(dir, rec.Owner, hostUID, uidCount)
			}
			if err == nil {
				rec.Owner = hostUID
				err = r.saveVolume(v.Name, rec)
			}
			if err != nil {
				return nil, fmt.Errorf("volume %s: give its files to the sandbox: %w", v.Name, err)
			}
		}
		out = append(out, sbinit.VolumeBind{Source: dir, Target: v.Path, ReadOnly: v.ReadOnly})
	}
	return out, nil
}
