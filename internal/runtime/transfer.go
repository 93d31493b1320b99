package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// TemplateMover is implemented by runtimes that hand a built or imported
// template to another node's runtime, for a sandbox placed on a node that
// lacks it. The base template is each host's own (its /usr) and never
// moves.
type TemplateMover interface {
	// ExportTemplate writes template name's files as a tar stream from
	// byte offset on, the same bytes every time for one version
	// (TemplateVersion); ErrConflict when the template is no longer that
	// version (it was replaced meanwhile).
	ExportTemplate(ctx context.Context, name, version string, offset int64, w io.Writer) error
	// ImportTemplate adds r to what it holds of t's stream and, once the
	// stream is whole, installs t (its files and its record as given): no
	// sandbox sees the name before everything is in place. It returns how
	// many bytes it holds and whether t is installed; a runtime that
	// already has this version of t is done at once. A reader with
	// nothing asks how far it got.
	ImportTemplate(ctx context.Context, t TemplateInfo, r io.Reader) (have int64, done bool, err error)
}

// MaxTransferTries bounds how often MoveStream picks a cut stream up
// again.
const MaxTransferTries = 5

// MoveStream hands what export writes (from a byte offset on) to imp,
// which spools it and says how much it holds and whether it is done,
// picking a cut stream up where imp's spool ends: a stream cut on
// either side (export failed, or imp's call did, unavailable) is tried
// again from there. It returns the stream's size and how often it was
// resumed. Snapshots, volumes and templates move between nodes through
// it.
func MoveStream(ctx context.Context, export func(off int64, w io.Writer) error, imp func(io.Reader) (int64, bool, error)) (int64, int, error) {
	var last error
	for try := range MaxTransferTries {
		have, done, err := imp(strings.NewReader(""))
		if err != nil {
			return 0, try, err
		}
		if done {
			return have, try, nil
		}
		pr, pw := io.Pipe()
		exported := make(chan error, 1)
		go func() {
			err := export(have, pw)
			pw.CloseWithError(err)
			exported <- err
		}()
		n, done, err := imp(pr)
		pr.CloseWithError(errImportEnded)
		eerr := <-exported
		switch {
		case errors.Is(eerr, ErrConflict) || errors.Is(eerr, ErrNotFound) || errors.Is(eerr, ErrInvalid):
			return 0, try, eerr // the sender refuses: no try will do better
		case err != nil && !errors.Is(err, ErrUnavailable):
			return 0, try, err
		case err == nil && done:
			return n, try, nil
		}
		last = cmp.Or(err, eerr, fmt.Errorf("cut off at %d bytes", n))
		if ctx.Err() != nil {
			return 0, try, ctx.Err()
		}
	}
	return 0, MaxTransferTries, fmt.Errorf("%w: gave up after %d tries: %v", ErrUnavailable, MaxTransferTries, last)
}

var errImportEnded = errors.New("import ended")
