//go:build !unix

package secrets

import (
	"errors"
	"io/fs"
)

// checkOwner cannot check ownership here, so it refuses every key file
// rather than trust one another user might read: set $AIRLOCK_MASTER_KEY.
func checkOwner(fs.FileInfo) error {
	return errors.New("key files are only supported on Unix; set $" + MasterKeyEnv)
}
