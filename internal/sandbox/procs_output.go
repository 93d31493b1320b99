package sandbox

import (
	"context"
	"fmt"
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

// ProcessOutput sends a background process's kept output from offset on
// to out and, with follow, what it writes next until it ends. A process
// lost with its sandbox ends the stream with that error, never a hang.
func (s *Service) ProcessOutput(ctx context.Context, c Caller, id string, pid int, offset int64, follow bool, out ProcStream) error {
	p, err := s.proc(ctx, c, id, pid)
	if err != nil {
		return err
	}
	defer s.idle.hold(id, s.now)()
	if v := p.out.from(0); offset < 0 || offset > v.next {
		return fmt.Errorf("%w: offset %d is past the %d bytes written", ErrInvalid, offset, v.next)
	}
	for {
		v := p.out.from(offset)
		if v.dropped > 0 {
			if err := out.Dropped(offset, v.dropped); err != nil {
				return err
			}
		}
		for _, ch := range v.chunks {
			if err := out.Output(ch.stream, ch.off, ch.data); err != nil {
				return err
			}
		}
		offset = v.next
		switch {
		case v.done && v.err != nil:
			return v.err
		case v.done:
			return out.Exit(v.exit, offset)
		case !follow:
			return out.End(offset)
		}
		select {
		case <-v.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
