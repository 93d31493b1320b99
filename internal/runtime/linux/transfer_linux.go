package linux

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/quota"
)

// A snapshot moves to another node as a tar of its writable layer, owners
// written as the ids inside the sandbox. The receiving node spools the
// stream (.snapshots/.incoming-NAME.tar), so a transfer cut off resumes
// at the bytes it holds, then unpacks it beneath a fresh directory of its
// pool, trusting nothing in it, and records the snapshot as owned by ids
// from 0 (snapshotState's Owners), which a sandbox made from it shifts
// into its own range.

var _ runtime.SnapshotMover = (*Runtime)(nil)

// ExportSnapshot writes snapshot name's writable layer from offset on.
func (r *Runtime) ExportSnapshot(ctx context.Context, name string, offset int64, w io.Writer) error {
	st, err := r.snapshotState(name)
	if err != nil {
		return err
	}
	p, _ := r.snapshotPath(name)
	err = exportTar(func(w io.Writer) error {
		return quota.WriteTar(filepath.Join(p, "upper"), "upper/", w, st.owners(), uidCount)
	}, offset, w)
	if err != nil {
		return fmt.Errorf("export snapshot %s: %w", name, err)
	}
	return nil
}

// exportTar writes what write produces to w, from byte offset on.
func exportTar(write func(io.Writer) error, offset int64, w io.Writer) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(write(pw)) }()
	defer pr.Close()
	if _, err := io.CopyN(io.Discard, pr, offset); err != nil {
		return fmt.Errorf("resume at %d: %w", offset, err)
	}
	_, err := io.Copy(w, pr)
	return err
}

// spoolTar adds rd to the file spool and says how many bytes it holds
// and whether they are a whole tar stream (at least its end-of-archive
// blocks); a reader cut off is not an error, the sender resumes.
func spoolTar(spool string, rd io.Reader) (int64, bool, error) {
	f, err := os.OpenFile(spool, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, false, err
	}
	_, cerr := io.Copy(f, rd)
	fi, serr := f.Stat()
	f.Close()
	if serr != nil {
		return 0, false, serr
	}
	have := fi.Size()
	return have, cerr == nil && have >= 1024 && wholeTar(spool), nil
}

// ImportSnapshot spools r and, once the stream is whole, unpacks it as
// snapshot name on template.
func (r *Runtime) ImportSnapshot(ctx context.Context, name, template string, rd io.Reader) (int64, bool, error) {
	dst, err := r.snapshotPath(name)
	if err != nil {
		return 0, false, err
	}
	tmplDir, err := r.resolveTemplate(template)
	if err != nil {
		return 0, false, err
	}
	if _, err := os.Lstat(dst); err == nil {
		return 0, false, fmt.Errorf("%w: snapshot %s", runtime.ErrConflict, name)
	}
	if err := os.MkdirAll(r.snapshotsDir(), 0o700); err != nil {
		return 0, false, err
	}
	spool := filepath.Join(r.snapshotsDir(), ".incoming-"+name+".tar")
	have, whole, err := spoolTar(spool, rd)
	if err != nil || !whole {
		return have, false, err
	}
	if err := r.unpackSnapshot(spool, dst, tmplDir, template); err != nil {
		os.Remove(spool)
		return 0, false, fmt.Errorf("import snapshot %s: %w", name, err)
	}
	os.Remove(spool)
	return have, true, nil
}

// wholeTar says whether the file holds a complete tar stream.
func wholeTar(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		_, err := tr.Next()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
}

func (r *Runtime) unpackSnapshot(spool, dst, tmplDir, template string) error {
	suffix := make([]byte, 6)
	rand.Read(suffix)
	tmp := filepath.Join(r.snapshotsDir(), ".import-"+hex.EncodeToString(suffix))
	if err := r.quota.NewDir(tmp); err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			r.quota.RemoveSnapshot(tmp)
		}
	}()
	f, err := os.Open(spool)
	if err != nil {
		return err
	}
	err = quota.ReadTar(f, tmp)
	f.Close()
	if err != nil {
		return err
	}
	if _, err := os.Lstat(filepath.Join(tmp, "upper")); err != nil {
		return errors.New("the stream holds no writable layer")
	}
	zero := 0
	b, _ := json.Marshal(persisted{Slot: -1, Owners: &zero, Template: tmplDir, TemplateName: template})
	if err := os.WriteFile(filepath.Join(tmp, stateFile), b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: snapshot %s", runtime.ErrConflict, filepath.Base(dst))
		}
		return err
	}
	ok = true
	return nil
}

// owners is the host uid the snapshot's files' ids start at: its
// sandbox's range, or 0 for one a node imported.
func (p persisted) owners() int {
	if p.Owners != nil {
		return *p.Owners
	}
	return slot{n: p.Slot}.hostUID()
}
