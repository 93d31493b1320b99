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

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/sbinit"
)

// A volume is a directory of the disk pool, .vol-NAME, limited like a
// sandbox's layer (a subvolume with its own qgroup on btrfs), with its
// record .vol-NAME.json beside it. Its files (.vol-NAME/data) are stored
// with the ids they have inside a sandbox and mounted idmapped through
// each sandbox's own user namespace, so that every sandbox that mounts it
// sees them as its own: one read-write mount at a time, or any number of
// read-only ones.

var _ runtime.Volumer = (*Runtime)(nil)

// volumeRecord is .vol-NAME.json.
type volumeRecord struct {
	Project uint32 `json:"project"`
	SizeMB  int64  `json:"size_mb"`
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
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: volume %s", runtime.ErrConflict, name)
		}
		return fmt.Errorf("create volume %s: %w", name, err)
	}
	rec := volumeRecord{Project: volumeProject(), SizeMB: sizeMB}
	err = r.quota.Limit(dir, rec.Project, sizeMB<<20)
	if err == nil {
		// Its root is the sandbox user's, as the id inside a sandbox.
		data := filepath.Join(dir, volumeData)
		if err = os.Mkdir(data, 0o755); err == nil {
			err = os.Lchown(data, sandboxUID, sandboxUID)
		}
	}
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

// volumeSource is a volume's tree on the host, to mount into a sandbox.
type volumeSource struct {
	path     string
	readOnly bool
}

// volumeData is the directory of a volume's files in its directory: the
// volume's own is root's alone (0700), so that no host user whose uid
// happens to be one of the ids the files are stored with can reach them.
const volumeData = "data"

// mountVolumes checks that sandbox name may mount vols and returns what
// its init and the host's mounts need.
func (r *Runtime) mountVolumes(name string, vols []runtime.VolumeMount) ([]sbinit.VolumeBind, []volumeSource, error) {
	r.volMu.Lock()
	defer r.volMu.Unlock()
	var binds []sbinit.VolumeBind
	var srcs []volumeSource
	for _, v := range vols {
		dir, err := r.volumePath(v.Name)
		if err != nil {
			return nil, nil, err
		}
		if _, err := r.loadVolume(v.Name); err != nil {
			return nil, nil, err
		}
		for _, rw := range r.volumeUsers(v.Name, name) {
			if rw || !v.ReadOnly {
				return nil, nil, fmt.Errorf("%w: volume %s is mounted read-write by another sandbox (one read-write mount at a time, or many read-only)", runtime.ErrConflict, v.Name)
			}
		}
		binds = append(binds, sbinit.VolumeBind{Target: v.Path, ReadOnly: v.ReadOnly})
		srcs = append(srcs, volumeSource{path: filepath.Join(dir, volumeData), readOnly: v.ReadOnly})
	}
	return binds, srcs, nil
}

// sendVolumeMounts makes an idmapped clone of each volume's tree, mapped
// through the user namespace of the init pid (its files' ids, stored as
// inside a sandbox, become the sandbox's own range), read-only where
// asked, and sends them to the init, which attaches them in its root.
func sendVolumeMounts(sock *os.File, pid int, vols []volumeSource) error {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", pid))
	if err != nil {
		return fmt.Errorf("volumes: the init's user namespace: %w", err)
	}
	defer ns.Close()
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, v := range vols {
		fd, err := unix.OpenTree(unix.AT_FDCWD, v.path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return fmt.Errorf("volume %s: clone its tree: %w", v.path, err)
		}
		fds = append(fds, fd)
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(ns.Fd())}
		if v.readOnly {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
			return fmt.Errorf("volume %s: idmapped mount (needs Linux 5.12+ and a filesystem that supports it): %w", v.path, err)
		}
	}
	if err := unix.Sendmsg(int(sock.Fd()), []byte{byte(len(fds))}, unix.UnixRights(fds...), nil, 0); err != nil {
		return fmt.Errorf("volumes: send their mounts to the init: %w", err)
	}
	return nil
}

// socketPair is a connected pair of SOCK_SEQPACKET sockets.
func socketPair() (ours, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "volumes"), os.NewFile(uintptr(fds[1]), "volumes"), nil
}
