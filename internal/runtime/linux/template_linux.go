package linux

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// templateVersion changes whenever the layout of a built template changes, so
// an old one is rebuilt rather than half-trusted.
const templateVersion = "base-3"

// template is a read-only lower layer plus the host directories bound
// read-only on top of it.
type template struct {
	rootfs string
	binds  []string // absolute host paths mounted read-only at the same path
	// bindFrom is where binds are found ("" or the host root, HostRoot).
	bindFrom string
}

// hostSystemDirs are the host directories the base template exposes. Where
// the host has merged /usr (/bin -> usr/bin) the template copies the symlink.
var hostSystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcCopies are the /etc entries the base template copies from the host: what
// dynamic linking, name lookup, TLS roots, shells and Python need. Nothing
// with credentials or host identity (shadow, ssh host keys, ssl/private,
// sudoers, machine-id) is ever copied.
var etcCopies = []string{
	"alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf",
	"debian_version", "gai.conf", "host.conf", "inputrc", "ld.so.cache",
	"ld.so.conf", "ld.so.conf.d", "localtime", "mime.types", "nsswitch.conf",
	"os-release", "profile", "profile.d", "protocols", "python3",
	"python3.11", "python3.12", "python3.13", "services", "shells", "skel",
	"ssl/certs", "ssl/openssl.cnf", "terminfo", "timezone", "gitconfig",
	"vim", "magic", "mailcap", "wgetrc", "lsb-release",
}

// etcNever is checked on every copied path as a second guard: a symlink or a
// nested directory must not smuggle a secret in.
var etcNever = []string{"shadow", "gshadow", "ssh", "sudoers", "private", "machine-id", "subuid", "subgid"}

// ensureBaseTemplate builds the base template under stateDir once and reuses
// it after. It is built in a temporary directory and renamed into place so a
// crash never leaves a half-built template that looks complete.
func ensureBaseTemplate(stateDir, hostRoot string) (template, error) {
	if hostRoot == "/" {
		hostRoot = ""
	}
	dir := filepath.Join(stateDir, "templates", "base")
	rootfs := filepath.Join(dir, "rootfs")
	binds, err := hostBinds(hostRoot)
	if err != nil {
		return template{}, err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "version")); err == nil && string(b) == templateVersion {
		return template{rootfs: rootfs, binds: binds, bindFrom: hostRoot}, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return template{}, fmt.Errorf("create templates dir: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".base-")
	if err != nil {
		return template{}, fmt.Errorf("build base template: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return template{}, err
	}
	if err := buildBaseRootfs(filepath.Join(tmp, "rootfs"), hostRoot); err != nil {
		return template{}, fmt.Errorf("build base template: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "version"), []byte(templateVersion), 0o644); err != nil {
		return template{}, err
	}
	old := dir + ".old"
	os.RemoveAll(old)
	if err := os.Rename(dir, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return template{}, fmt.Errorf("replace base template: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return template{}, fmt.Errorf("install base template: %w", err)
	}
	os.RemoveAll(old)
	return template{rootfs: rootfs, binds: binds, bindFrom: hostRoot}, nil
}

// hostBinds lists the host system directories that are real directories
// (bound read-only); symlinked ones are recreated as symlinks in the rootfs.
func hostBinds(root string) ([]string, error) {
	var binds []string
	for _, d := range hostSystemDirs {
		fi, err := os.Lstat(root + d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", d, err)
		}
		if fi.IsDir() {
			binds = append(binds, d)
		}
	}
	if len(binds) == 0 || binds[0] != "/usr" {
		return nil, fmt.Errorf("host has no %s/usr directory to build the base template from", root)
	}
	return binds, nil
}

func buildBaseRootfs(rootfs, root string) error {
	for _, d := range []string{"", "dev", "etc", "home", "home/user", "proc", "sys", "tmp", "run", "mnt", "opt", "srv", "var", "var/tmp", "var/lib", "var/cache", "var/log"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Mkdir(filepath.Join(rootfs, "root"), 0o700); err != nil {
		return err
	}
	for _, d := range []string{"tmp", "var/tmp"} {
		if err := os.Chmod(filepath.Join(rootfs, d), 0o1777); err != nil {
			return err
		}
	}
	for _, d := range hostSystemDirs {
		fi, err := os.Lstat(root + d)
		if err != nil {
			continue
		}
		dst := filepath.Join(rootfs, d)
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(root + d)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, dst); err != nil {
				return err
			}
		} else if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
	}
	if err := os.Symlink("/proc/self/mounts", filepath.Join(rootfs, "etc/mtab")); err != nil {
		return err
	}
	for _, name := range etcCopies {
		if err := copyTree(filepath.Join(root+"/etc", name), filepath.Join(rootfs, "etc", name)); err != nil {
			return fmt.Errorf("copy /etc/%s: %w", name, err)
		}
	}
	return writeIdentityFiles(filepath.Join(rootfs, "etc"))
}

// writeIdentityFiles generates the users and groups the sandbox knows. The
// host's own passwd and group files are never copied: they name host users.
func writeIdentityFiles(etc string) error {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return err
	}
	files := map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/bash\n" +
			"user:x:1000:1000:user:/home/user:/bin/bash\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":       "root:x:0:\ntty:x:5:\nuser:x:1000:\nnogroup:x:65534:\n",
		"resolv.conf": "# airlock: this sandbox has no network unless its policy allows one\n",
		"machine-id":  hex.EncodeToString(id) + "\n",
		"hostname":    "sandbox\n",
		"hosts":       "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies files, directories and symlinks, skipping anything not
// world-readable (it may be a secret) and anything named in etcNever.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, bad := range etcNever {
			if d.Name() == bad {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			return os.Symlink(link, target)
		case info.IsDir():
			if info.Mode().Perm()&0o005 != 0o005 {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		case info.Mode().IsRegular():
			if info.Mode().Perm()&0o004 == 0 {
				return nil
			}
			return copyFile(path, target)
		}
		return nil
	})
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	_, err := copyRegular(src, dst, func(m fs.FileMode) fs.FileMode { return m.Perm()&0o755 | 0o444 })
	return err
}
