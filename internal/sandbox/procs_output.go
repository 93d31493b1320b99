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
	return s.procOutput(ctx, id, p, offset, follow, out)
}

// ExecOutput is ProcessOutput for the command with exec id execID: one
// streamed to a client (its client cut off by a restart of the daemon
// re-attaches with it) or a background process.
func (s *Service) ExecOutput(ctx context.Context, c Caller, id, execID string, offset int64, follow bool, out ProcStream) error {
	p, err := s.execByID(ctx, c, id, execID)
	if err != nil {
		return err
	}
	return s.procOutput(ctx, id, p, offset, follow, out)
}

func (s *Service) procOutput(ctx context.Context, id string, p *bgProc, offset int64, follow bool, out ProcStream) error {
	defer s.idle.hold(id, s.now)()
	if v := p.out.From(0); offset < 0 || offset > v.Next {
		return fmt.Errorf("%w: offset %d is past the %d bytes written", ErrInvalid, offset, v.Next)
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
		case <-s.streamsEnd:
			return fmt.Errorf("%w; the process goes on: follow its output again from offset %d", ErrServerStopping, offset)
		}
	}
}
