package secrets

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MasterKeyEnv names the environment variable LoadBox reads first.
const MasterKeyEnv = "AIRLOCK_MASTER_KEY"

// MasterKeyFile is the key file's name in the data directory.
const MasterKeyFile = "master.key"

// LoadBox takes the master key from $AIRLOCK_MASTER_KEY (32 bytes, base64
// std or hex encoded) or else from <dataDir>/master.key, which it creates
// (32 random bytes, base64, mode 0600) when missing. A key file with a
// wider mode than 0600 or not owned by the current euid is refused, and a
// malformed key is an error naming where it came from.
//
// Losing the key loses every secret: back up master.key with the database,
// but not next to it where one copy leaks both.
func LoadBox(dataDir string) (*Box, error) {
	if v, ok := os.LookupEnv(MasterKeyEnv); ok {
		// Set but empty is refused, not skipped: falling back to a
		// generated file would seal new secrets under a key the operator
		// did not mean to use.
		key, err := decodeKey(v)
		if err != nil {
			return nil, fmt.Errorf("master key from $%s: %w", MasterKeyEnv, err)
		}
		return NewBox(key)
	}
	path := filepath.Join(dataDir, MasterKeyFile)
	key, err := readKeyFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createKeyFile(dataDir, path); err != nil {
			return nil, fmt.Errorf("create master key %s: %w", path, err)
		}
		key, err = readKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("master key from %s: %w", path, err)
	}
	return NewBox(key)
}

// decodeKey reads a KeySize-byte key written in hex or standard base64.
// The error never quotes the input: it may be most of a real key.
func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty; want 32 bytes, base64 or hex encoded")
	}
	if len(s) == 2*KeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	k, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("neither %d hex digits nor standard base64", 2*KeySize)
	}
	if len(k) != KeySize {
		return nil, fmt.Errorf("decodes to %d bytes, want %d", len(k), KeySize)
	}
	return k, nil
}

// readKeyFile reads and decodes the key file after checking that only its
// owner, this process's user, can read it.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Checked on the open file, not the path, so what is checked is what
	// is read.
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%v)", fi.Mode().Type())
	}
	if perm := fi.Mode().Perm(); perm&^0o600 != 0 {
		// Other users who could read it can decrypt every tenant's
		// secrets from a copy of the database.
		return nil, fmt.Errorf("mode %04o lets users other than its owner read it; chmod 600 it", perm)
	}
	if err := checkOwner(fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return nil, err
	}
	return decodeKey(string(b))
}

// createKeyFile writes a new random key to path unless a file is already
// there. The key is written to a temporary file first and linked into
// place, which fails if path exists: of two daemons starting at once only
// one key lands, and neither ever reads a half-written file.
func createKeyFile(dir, path string) error {
	tmp, err := os.CreateTemp(dir, MasterKeyFile+".tmp-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	key := make([]byte, KeySize)
	rand.Read(key) // never fails (crypto/rand, Go 1.24+)
	_, err = fmt.Fprintln(tmp, base64.StdEncoding.EncodeToString(key))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // another daemon won the race: use its key
		}
		return err
	}
	// The new name must survive a crash too, or secrets sealed after it
	// would be lost with the key.
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
