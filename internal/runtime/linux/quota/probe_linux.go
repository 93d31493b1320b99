package quota

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// projectQuotaWorks learns whether this kernel mounts ext4 with prjquota:
// a kernel built without CONFIG_QFMT_V2 refuses with EINVAL, which is also
// what it says for a bad image, so the probe uses a fresh one. Formatting
// and mounting 16 MiB costs some 20-30 ms, which every `airlock run` on a
// host without btrfs-progs paid before its command started: the answer is
// kept beside the data dir's pool (dir is the pool's directory), for this
// kernel, and probed again only after the kernel changes.
func projectQuotaWorks(dir string) (bool, error) {
	probeMu.Lock()
	defer probeMu.Unlock()
	kernel := kernelRelease()
	cache := dir + ".probe"
	if b, err := os.ReadFile(cache); err == nil {
		if works, ok := parseProbe(b, kernel); ok {
			return works, nil
		}
	}
	works, err := probeProjectQuota()
	if err != nil {
		return false, err
	}
	// Best effort: a data dir we cannot write to is probed again next time.
	tmp := cache + ".tmp"
	if os.WriteFile(tmp, []byte(formatProbe(works, kernel)), 0o644) == nil {
		os.Rename(tmp, cache)
	}
	return works, nil
}

var probeMu sync.Mutex

// probeRuns counts the probes made, for tests.
var probeRuns int

func formatProbe(works bool, kernel string) string {
	return fmt.Sprintf("kernel %s\next4 project quota %v\n", kernel, works)
}

// parseProbe reads a kept probe result; ok is false when it was made on
// another kernel or cannot be read.
func parseProbe(b []byte, kernel string) (works, ok bool) {
	var k string
	if _, err := fmt.Sscanf(string(b), "kernel %s\next4 project quota %t\n", &k, &works); err != nil || k != kernel || kernel == "" {
		return false, false
	}
	return works, true
}

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

func probeProjectQuota() (bool, error) {
	probeRuns++
	tmp, err := os.MkdirTemp("", "airlock-quota-probe-")
	if err != nil {
		return false, fmt.Errorf("probe project quota: %w", err)
	}
	defer os.RemoveAll(tmp)
	img, mnt := filepath.Join(tmp, "img"), filepath.Join(tmp, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		return false, fmt.Errorf("probe project quota: %w", err)
	}
	if err := makeImage(img, 16<<20, "ext4", sharedMkfs...); err != nil {
		return false, err
	}
	_, err = mountImage(img, mnt, "ext4", sharedMount)
	if errors.Is(err, unix.EINVAL) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("probe project quota: %w", err)
	}
	if err := unix.Unmount(mnt, 0); err != nil {
		return false, fmt.Errorf("probe project quota: %w", err)
	}
	return true, nil
}
