package linux

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBaseTemplateHasNoSecrets builds the base template from this host and
// checks what a sandbox would see in /etc.
func TestBaseTemplateHasNoSecrets(t *testing.T) {
	state := t.TempDir()
	tmpl, err := ensureBaseTemplate(state, "")
	if err != nil {
		t.Fatal(err)
	}
	etc := filepath.Join(tmpl.rootfs, "etc")
	for _, secret := range []string{"shadow", "gshadow", "ssh", "sudoers", "ssl/private", "subuid"} {
		if _, err := os.Lstat(filepath.Join(etc, secret)); err == nil {
			t.Errorf("template has /etc/%s", secret)
		}
	}
	filepath.Walk(tmpl.rootfs, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o004 == 0 {
			t.Errorf("%s is not world-readable: copied a private file", p)
		}
		return nil
	})
	passwd, err := os.ReadFile(filepath.Join(etc, "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(passwd), "user:x:1000:1000:user:/home/user:/bin/bash") {
		t.Errorf("passwd lacks the sandbox user:\n%s", passwd)
	}
	if strings.Count(string(passwd), "\n") != 3 {
		t.Errorf("passwd names host users:\n%s", passwd)
	}
	if tmpl.binds[0] != "/usr" {
		t.Errorf("binds %v, want /usr first", tmpl.binds)
	}
	// A second call reuses the built template.
	again, err := ensureBaseTemplate(state, "")
	if err != nil || again.rootfs != tmpl.rootfs {
		t.Errorf("rebuild: %v %v", again, err)
	}
}
