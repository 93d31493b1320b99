package npmreg

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strings"
)

// maxManifest caps package.json: a real one is a few KB, and the whole of
// it is held in memory for every version served.
const maxManifest = 1 << 20

// pack is one tarball of the directory: its package.json and digests.
type pack struct {
	file      string                     // path on disk
	name      string                     // package.json "name"
	version   string                     // package.json "version"
	manifest  map[string]json.RawMessage // all of package.json
	integrity string                     // "sha512-<base64>", as npm's dist.integrity
	shasum    string                     // hex sha1, as npm's dist.shasum
}

// readPack reads file's package.json (from the tarball's top directory,
// "package/" for npm pack output) and digests the whole file.
func readPack(file string) (*pack, error) {
	raw, err := manifestOf(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s512, s1 := sha512.New(), sha1.New()
	if _, err := io.Copy(io.MultiWriter(s512, s1), f); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	p := &pack{
		file:      file,
		integrity: "sha512-" + base64.StdEncoding.EncodeToString(s512.Sum(nil)),
		shasum:    hex.EncodeToString(s1.Sum(nil)),
	}
	if err := json.Unmarshal(raw, &p.manifest); err != nil {
		return nil, fmt.Errorf("%s: package.json: %w", file, err)
	}
	var id struct{ Name, Version string }
	if err := json.Unmarshal(raw, &id); err != nil {
		return nil, fmt.Errorf("%s: package.json: %w", file, err)
	}
	if !validName(id.Name) {
		return nil, fmt.Errorf("%s: package.json: bad name %q", file, id.Name)
	}
	if _, ok := parseVersion(id.Version); !ok {
		return nil, fmt.Errorf("%s: package.json: bad version %q", file, id.Version)
	}
	p.name, p.version = id.Name, id.Version
	return p, nil
}

// manifestOf finds file's package.json. A platform package puts it after a
// binary of some 300 MB, so the whole tarball is inflated: by the system's
// gzip when there is one (Go's inflate, instrumented under -race, takes a
// minute for that), else by compress/gzip.
func manifestOf(file string) ([]byte, error) {
	gz, err := exec.LookPath("gzip")
	if err != nil {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		return findManifest(zr)
	}
	cmd := exec.Command(gz, "-dc", file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	raw, ferr := findManifest(out)
	io.Copy(io.Discard, out) // let gzip finish, so its exit status tells
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("gzip: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return raw, ferr
}

// findManifest returns the bytes of <top>/package.json from a tar.
// npm strips the first path component whatever it is called, so any single
// top directory is accepted.
func findManifest(r io.Reader) ([]byte, error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no package.json in the top directory")
		}
		if err != nil {
			return nil, err
		}
		dir, base := path.Split(path.Clean(h.Name))
		if base != "package.json" || strings.Count(dir, "/") != 1 || h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxManifest+1))
		if err != nil {
			return nil, err
		}
		if len(b) > maxManifest {
			return nil, fmt.Errorf("package.json over %d bytes", maxManifest)
		}
		return b, nil
	}
}
