package quota

import (
	"path/filepath"

	"github.com/airlockhq/airlock/internal/runtime/linux/mountinfo"
)

// mountAt returns the filesystem mounted exactly at dir, the topmost one when
// several are stacked there.
func mountAt(dir string) (mountinfo.Mount, bool, error) {
	mounts, err := mountinfo.Read()
	if err != nil {
		return mountinfo.Mount{}, false, err
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	var found mountinfo.Mount
	ok := false
	for _, m := range mounts {
		if m.Point == dir {
			found, ok = m, true
		}
	}
	return found, ok, nil
}

// enforcesProjectQuota says whether m enforces project quotas: ext4 shows
// "prjquota" among its options, xfs "prjquota" or "pquota".
func enforcesProjectQuota(m mountinfo.Mount) bool {
	if m.FSType != "ext4" && m.FSType != "xfs" {
		return false
	}
	return m.HasOption("prjquota") || m.HasOption("pquota")
}
