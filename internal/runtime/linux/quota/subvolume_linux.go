package quota

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// subvolumes is the state of btrfs mode: each limited directory is a
// subvolume of the filesystem at Dir, bounded by the limit of its level-0
// qgroup. Creating and deleting one is a metadata change of well under a
// millisecond, where image mode formats, attaches and mounts a filesystem.
type subvolumes struct {
	sysfs string // /sys/fs/btrfs/<fsid>, where the kernel shows qgroup usage
	quota string // "squota" or "qgroup", as the kernel names the mode

	mu  sync.Mutex
	ids map[uint32]subvolume // cache of the records in Dir
}

// subvolume is what a project id stands for in btrfs mode. The id matters
// because a name may be reused by a later sandbox: Clear deletes only the
// subvolume it limited, never a newer one with the same name.
type subvolume struct {
	name string // in Dir
	id   uint64 // btrfs subvolume (and qgroup) id
}

// recordPath is the symlink that maps project id to its subvolume, so a
// restarted daemon can clear a sandbox an earlier process limited. Its
// target is "<name>@<subvolume id>".
func (f *FS) recordPath(id uint32) string {
	return filepath.Join(f.dir, fmt.Sprintf(".quota-%d.subvol", id))
}

func (f *FS) lookup(id uint32) (subvolume, bool, error) {
	s := f.btrfs
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv, ok := s.ids[id]; ok {
		return sv, true, nil
	}
	target, err := os.Readlink(f.recordPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return subvolume{}, false, nil
	}
	if err != nil {
		return subvolume{}, false, err
	}
	i := strings.LastIndexByte(target, '@')
	n, perr := strconv.ParseUint(target[i+1:], 10, 64)
	if i <= 0 || perr != nil || strings.Contains(target[:i], "/") {
		return subvolume{}, false, fmt.Errorf("record %s: bad target %q", f.recordPath(id), target)
	}
	sv := subvolume{name: target[:i], id: n}
	s.ids[id] = sv
	return sv, true, nil
}

// record saves sv as project id's, replacing a record a failed Clear left.
func (f *FS) record(id uint32, sv subvolume) error {
	s := f.btrfs
	s.mu.Lock()
	defer s.mu.Unlock()
	p := f.recordPath(id)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Symlink(fmt.Sprintf("%s@%d", sv.name, sv.id), p); err != nil {
		return err
	}
	s.ids[id] = sv
	return nil
}

// owner returns the project whose record names sv, if one does.
func (f *FS) owner(sv subvolume) (uint32, bool, error) {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return 0, false, err
	}
	want := fmt.Sprintf("%s@%d", sv.name, sv.id)
	for _, e := range entries {
		var id uint32
		if _, err := fmt.Sscanf(e.Name(), ".quota-%d.subvol", &id); err != nil || e.Name() != filepath.Base(f.recordPath(id)) {
			continue
		}
		target, err := os.Readlink(filepath.Join(f.dir, e.Name()))
		if err != nil {
			return 0, false, err
		}
		if target == want {
			return id, true, nil
		}
	}
	return 0, false, nil
}

func (f *FS) forget(id uint32) error {
	s := f.btrfs
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, id)
	if err := os.Remove(f.recordPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// limitSubvolume turns the empty directory path, directly in Dir, into a
// subvolume with the same owner and mode, limited to bytes. Called again on
// the subvolume of the same project, it changes the limit.
func (f *FS) limitSubvolume(path string, id uint32, bytes int64) error {
	name := filepath.Base(path)
	if filepath.Dir(path) != f.dir {
		return fmt.Errorf("limit %s: not a directory directly in %s", path, f.dir)
	}
	root, err := os.Open(f.dir)
	if err != nil {
		return fmt.Errorf("limit %s: %w", path, err)
	}
	defer root.Close()
	var st unix.Stat_t
	if err := unix.Fstatat(int(root.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("limit %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("limit %s: not a directory", path)
	}
	if st.Ino == btrfsFirstFreeObjectID {
		return f.relimit(root, path, id, bytes)
	}
	if err := unix.Unlinkat(int(root.Fd()), name, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("limit %s: must be an empty directory: %w", path, err)
	}
	sv, err := makeSubvolume(root, name, st, uint64(bytes))
	if err == nil {
		if err = f.record(id, sv); err != nil {
			err = errors.Join(err, destroySubvolume(root, name))
		}
	}
	if err != nil {
		// Give the caller back the directory it had.
		if merr := unix.Mkdirat(int(root.Fd()), name, 0o700); merr == nil {
			unix.Fchownat(int(root.Fd()), name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
			unix.Fchmodat(int(root.Fd()), name, st.Mode&0o7777, 0)
		}
		return fmt.Errorf("limit %s: %w", path, err)
	}
	return nil
}

// makeSubvolume creates the subvolume name in root with the owner and mode
// of st, limited to bytes, and deletes it again if any step fails.
func makeSubvolume(root *os.File, name string, st unix.Stat_t, bytes uint64) (subvolume, error) {
	if err := createSubvolume(root, name); err != nil {
		return subvolume{}, fmt.Errorf("create subvolume: %w", err)
	}
	sv := subvolume{name: name}
	d, err := os.OpenFile(filepath.Join(root.Name(), name), os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		err = errors.Join(unix.Fchown(int(d.Fd()), int(st.Uid), int(st.Gid)), unix.Fchmod(int(d.Fd()), st.Mode&0o7777))
		if err == nil {
			sv.id, err = subvolumeID(d)
		}
		d.Close()
	}
	if err == nil {
		if err = limitQgroup(root, sv.id, bytes); err != nil {
			err = fmt.Errorf("limit qgroup 0/%d: %w", sv.id, err)
		}
	}
	if err != nil {
		return subvolume{}, errors.Join(err, destroySubvolume(root, name))
	}
	return sv, nil
}

// relimit changes the limit of the subvolume path, which must be the one
// project id limited before.
func (f *FS) relimit(root *os.File, path string, id uint32, bytes int64) error {
	sv, ok, err := f.lookup(id)
	if err != nil {
		return fmt.Errorf("limit %s: %w", path, err)
	}
	if !ok || sv.name != filepath.Base(path) {
		return fmt.Errorf("limit %s: a subvolume of another project: %w", path, fs.ErrExist)
	}
	if err := limitQgroup(root, sv.id, uint64(bytes)); err != nil {
		return fmt.Errorf("limit %s: qgroup 0/%d: %w", path, sv.id, err)
	}
	return nil
}

// usageSubvolume reports the bytes charged to project id's qgroup: those
// written out (exclusive) and those still in the page cache that the kernel
// has reserved against the limit (rsv_data). The kernel keeps both in
// memory, so this is as current as the limit itself; space freed by
// deleting files shows at the next transaction commit (30 s at most).
func (f *FS) usageSubvolume(id uint32) (int64, error) {
	sv, ok, err := f.lookup(id)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fs.ErrNotExist
	}
	var total int64
	for _, k := range []string{"exclusive", "rsv_data"} {
		b, err := os.ReadFile(filepath.Join(f.btrfs.sysfs, "qgroups", fmt.Sprintf("0_%d", sv.id), k))
		if errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("qgroup 0/%d: %w", sv.id, fs.ErrNotExist)
		}
		if err != nil {
			return 0, fmt.Errorf("read qgroup usage: %w: %w", err, ErrUnavailable)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("qgroup 0/%d %s: %w", sv.id, k, err)
		}
		total += n
	}
	return total, nil
}

// clearSubvolume deletes project id's subvolume with all it holds; the
// kernel frees its extents in the background, and once they are gone
// removes its qgroup too (it refuses while the qgroup still counts bytes).
// Nothing may be mounted on or in the subvolume: the caller's overlay lives
// in a mount namespace that is gone by then.
func (f *FS) clearSubvolume(id uint32) error {
	sv, ok, err := f.lookup(id)
	if err != nil || !ok {
		return err
	}
	root, err := os.Open(f.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	d, err := os.OpenFile(filepath.Join(f.dir, sv.name), os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err == nil {
		n, err := subvolumeID(d)
		d.Close()
		if err != nil {
			return fmt.Errorf("subvolume %s: %w", sv.name, err)
		}
		// Another subvolume under that name belongs to a later sandbox.
		if n == sv.id {
			if err := destroySubvolume(root, sv.name); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("delete subvolume %s: %w", sv.name, err)
			}
		}
	}
	return f.forget(id)
}
