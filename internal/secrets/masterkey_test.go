package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/internal/testenv"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// sealWith seals under key so a test can tell which key a Box holds.
func sealWith(t *testing.T, key []byte) []byte {
	t.Helper()
	b, err := NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	return b.Seal([]byte("v"), nil)
}

// noEnvKey unsets $AIRLOCK_MASTER_KEY for the test, restoring it after.
func noEnvKey(t *testing.T) {
	t.Setenv(MasterKeyEnv, "")
	os.Unsetenv(MasterKeyEnv)
}

func opens(b *Box, sealed []byte) bool {
	_, err := b.Open(sealed, nil)
	return err == nil
}

func TestLoadBoxEnv(t *testing.T) {
	sealed := sealWith(t, testKey)
	for name, v := range map[string]string{
		"base64":        base64.StdEncoding.EncodeToString(testKey),
		"hex":           hex.EncodeToString(testKey),
		"hex upper":     strings.ToUpper(hex.EncodeToString(testKey)),
		"base64 spaces": " " + base64.StdEncoding.EncodeToString(testKey) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv(MasterKeyEnv, v)
			b, err := LoadBox(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !opens(b, sealed) {
				t.Error("box does not hold the key from the environment")
			}
			// The environment wins: no key file is made.
			if _, err := os.Stat(filepath.Join(dir, MasterKeyFile)); !os.IsNotExist(err) {
				t.Errorf("key file created with the key in the environment: %v", err)
			}
		})
	}
}

func TestLoadBoxEnvMalformed(t *testing.T) {
	secretish := strings.Repeat("Zm9v", 9) // valid base64 of 27 bytes
	for name, v := range map[string]string{
		"empty":        "",
		"short base64": base64.StdEncoding.EncodeToString(testKey[:16]),
		"long base64":  base64.StdEncoding.EncodeToString(append(testKey, 1)),
		"raw base64":   base64.RawStdEncoding.EncodeToString(testKey),
		"short hex":    hex.EncodeToString(testKey[:31]),
		"bad hex":      strings.Repeat("g", 64),
		"raw key":      string(testKey),
		"almost":       secretish,
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(MasterKeyEnv, v)
			_, err := LoadBox(t.TempDir())
			if err == nil {
				t.Fatal("malformed key accepted")
			}
			if !strings.Contains(err.Error(), "$"+MasterKeyEnv) {
				t.Errorf("error %q does not say where the key came from", err)
			}
			if v != "" && strings.Contains(err.Error(), strings.TrimSpace(v)) {
				t.Errorf("error %q quotes the key", err)
			}
		})
	}
}

func TestLoadBoxGeneratesFile(t *testing.T) {
	noEnvKey(t)
	dir := t.TempDir()
	b1, err := LoadBox(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, MasterKeyFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("key file mode %04o, want 0600", m)
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(first))); err != nil || len(k) != KeySize {
		t.Errorf("key file is not %d bytes in base64: %v", KeySize, err)
	}
	sealed := b1.Seal([]byte("v"), nil)

	// A restart reads the same key: what was sealed before still opens.
	b2, err := LoadBox(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, again) {
		t.Error("key file changed on reload")
	}
	if !opens(b2, sealed) {
		t.Error("reloaded box does not open what the first sealed")
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Errorf("data dir holds %v, %v; want only %s (no temporary files left)", ents, err, MasterKeyFile)
	}
}

// TestLoadBoxRace starts many "daemons" on one empty data directory at
// once: they must all end up with the one key that landed.
func TestLoadBoxRace(t *testing.T) {
	noEnvKey(t)
	dir := t.TempDir()
	const n = 16
	boxes := make([]*Box, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { boxes[i], errs[i] = LoadBox(dir) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("daemon %d: %v", i, err)
		}
	}
	sealed := boxes[0].Seal([]byte("v"), nil)
	for i, b := range boxes {
		if !opens(b, sealed) {
			t.Errorf("daemon %d holds another key", i)
		}
	}
}

func TestLoadBoxFileUsed(t *testing.T) {
	noEnvKey(t)
	dir := t.TempDir()
	path := filepath.Join(dir, MasterKeyFile)
	if err := os.WriteFile(path, []byte(hex.EncodeToString(testKey)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBox(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !opens(b, sealWith(t, testKey)) {
		t.Error("box does not hold the key from the file")
	}
}

func TestLoadBoxRefusesFile(t *testing.T) {
	noEnvKey(t)
	good := base64.StdEncoding.EncodeToString(testKey) + "\n"
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		uid     int // -1: leave the owner
		want    string
	}{
		{"group and world readable", good, 0o644, -1, "mode 0644"},
		{"group readable", good, 0o640, -1, "mode 0640"},
		{"executable", good, 0o700, -1, "mode 0700"},
		{"malformed", "not a key\n", 0o600, -1, "neither 64 hex digits nor standard base64"},
		{"empty", "", 0o600, -1, "empty"},
		{"short", base64.StdEncoding.EncodeToString(testKey[:8]), 0o600, -1, "decodes to 8 bytes"},
		{"other owner", good, 0o600, 65534, "owned by uid 65534"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, MasterKeyFile)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil { // past the umask
				t.Fatal(err)
			}
			if tt.uid >= 0 {
				testenv.RequiresRoot(t, "give a file to another user")
				if err := os.Chown(path, tt.uid, -1); err != nil {
					t.Fatal(err)
				}
			}
			_, err := LoadBox(dir)
			if err == nil {
				t.Fatal("key file accepted")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q: want it to name %s and say %q", err, path, tt.want)
			}
			// A refused file is left for the operator to fix, never
			// replaced by a new key (that would orphan every sealed secret).
			if got, _ := os.ReadFile(path); string(got) != tt.content {
				t.Error("refused key file was changed")
			}
		})
	}
}

func TestLoadBoxRefusesDirectory(t *testing.T) {
	noEnvKey(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, MasterKeyFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBox(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("LoadBox with a directory for a key file: %v", err)
	}
}
