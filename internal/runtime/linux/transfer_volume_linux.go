package linux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/quota"
)

// A volume no sandbox mounts moves to another node as snapshots do: a
// tar of its tree (its ids are those inside a sandbox already), spooled
// by the receiver (.vol-NAME.incoming.tar) and resumed where it broke
// off, then unpacked into a fresh volume with the same limit.

var _ runtime.VolumeMover = (*Runtime)(nil)

// ExportVolume writes volume name's tree from offset on.
func (r *Runtime) ExportVolume(ctx context.Context, name string, offset int64, w io.Writer) error {
	dir, err := r.volumePath(name)
	if err != nil {
		return err
	}
	r.volMu.Lock()
	_, err = r.loadVolume(name)
	users := r.volumeUsers(name, "")
	r.volMu.Unlock()
	if err != nil {
		return err
	}
	if len(users) > 0 {
		return fmt.Errorf("%w: volume %s is mounted: it moves only while no sandbox holds it", runtime.ErrConflict, name)
	}
	data := filepath.Join(dir, volumeData)
	err = exportTar(func(w io.Writer) error { return quota.WriteTar(data, volumeData+"/", w, 0, uidCount) }, offset, w)
	if err != nil {
		return fmt.Errorf("export volume %s: %w", name, err)
	}
	return nil
}

// ImportVolume spools rd and, once the stream is whole, makes volume name
// of sizeMB from it.
func (r *Runtime) ImportVolume(ctx context.Context, name string, sizeMB int64, rd io.Reader) (int64, bool, error) {
	if _, err := r.volumePath(name); err != nil {
		return 0, false, err
	}
	if _, err := r.loadVolume(name); err == nil {
		return 0, false, fmt.Errorf("%w: volume %s", runtime.ErrConflict, name)
	}
	spool := filepath.Join(r.sandboxesDir(), ".vol-"+name+".incoming.tar")
	have, whole, err := spoolTar(spool, rd)
	if err != nil || !whole {
		return have, false, err
	}
	defer os.Remove(spool)
	if err := r.CreateVolume(ctx, name, sizeMB); err != nil {
		return 0, false, err
	}
	if err := r.unpackVolume(name, spool); err != nil {
		return 0, false, errors.Join(fmt.Errorf("import volume %s: %w", name, err), r.DeleteVolume(ctx, name))
	}
	return have, true, nil
}

func (r *Runtime) unpackVolume(name, spool string) error {
	dir, _ := r.volumePath(name)
	// The stream makes data/ itself, with its owner and mode.
	if err := os.Remove(filepath.Join(dir, volumeData)); err != nil {
		return err
	}
	f, err := os.Open(spool)
	if err != nil {
		return err
	}
	defer f.Close()
	return quota.ReadTar(f, dir)
}
