package quota

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// projectQuotaWorks learns, once per process, whether this kernel mounts
// ext4 with prjquota: a kernel built without CONFIG_QFMT_V2 refuses with
// EINVAL, which is also what it says for a bad image, so the probe uses a
// fresh one. Formatting and mounting 16 MiB costs some 30 ms.
var projectQuotaWorks = sync.OnceValues(func() (bool, error) {
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
})
