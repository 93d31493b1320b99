package linux

import (
	"time"

	"github.com/airlockhq/airlock/internal/runtime/linux/quota"
)

// diskLimiter caps the bytes a sandbox's writable layer may use.
type diskLimiter interface {
	Limit(dir string, project uint32, bytes int64) error
	Usage(project uint32) (int64, error)
	Clear(project uint32) error
	Close() error
	WaitDetached(time.Duration) error
	Mode() string
	// Snapshot, Adopt and RemoveSnapshot keep and reuse copies of
	// limited directories (snapshot_linux.go).
	Snapshot(src, dst string) error
	Adopt(path string, project uint32, bytes int64) error
	RemoveSnapshot(path string) error
	// NewDir makes an empty directory snapshots of it can share
	// (transfer_linux.go).
	NewDir(path string) error
}

func setupDiskPool(dir string, size int64) (diskLimiter, error) {
	fs, err := quota.Setup(dir, size)
	if err != nil {
		return nil, err
	}
	return fs, nil
}
