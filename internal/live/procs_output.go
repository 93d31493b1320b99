package live

import (
	"context"
	"fmt"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// ProcStream receives a background process's output from an offset on.
type ProcStream interface {
	// Output is a piece of stdout or stderr starting at offset.
	Output(stream string, offset int64, data []byte) error
	// Dropped says bytes from offset on were no longer kept.
	Dropped(offset, bytes int64) error
	// Exit is the last call for a process that ended; next is the offset
	// after its last output.
	Exit(res ExecResult, next int64) error
	// End is the last call when not following a running process.
	End(next int64) error
}

// Output sends p's kept output from offset on to out and, with follow,
// what it writes next until it ends; p runs in sandbox id. A process lost
// with its sandbox ends the stream with that error, never a hang.
func (w *Work) Output(ctx context.Context, id string, p *Proc, offset int64, follow bool, out ProcStream) error {
	defer w.host.Hold(id)()
	if v := p.out.From(0); offset < 0 || offset > v.Next {
		return fmt.Errorf("%w: offset %d is past the %d bytes written", errdefs.ErrInvalid, offset, v.Next)
	}
	for {
		v := p.out.From(offset)
		if v.Dropped > 0 {
			if err := out.Dropped(offset, v.Dropped); err != nil {
				return err
			}
		}
		for _, ch := range v.Chunks {
			if err := out.Output(ch.Stream, ch.Off, ch.Data); err != nil {
				return err
			}
		}
		offset = v.Next
		switch {
		case v.Done && v.Ended.err != nil:
			return v.Ended.err
		case v.Done:
			return out.Exit(v.Ended.exit, offset)
		case !follow:
			return out.End(offset)
		}
		select {
		case <-v.Wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-w.streamsEnd:
			return fmt.Errorf("%w; the process goes on: follow its output again from offset %d", ErrServerStopping, offset)
		}
	}
}

// ErrServerStopping is the ErrUnavailable of a follow of output that the
// server let go as it stops: what was followed goes on, for the next
// daemon.
var ErrServerStopping = fmt.Errorf("%w: the server is shutting down", errdefs.ErrUnavailable)
