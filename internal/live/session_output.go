package live

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/runtime"
)

// shellOutput takes the output of a shell that runs on this daemon's
// connection (not as a job).
type shellOutput struct{ se *Session }

func (o shellOutput) Write(p []byte) (int, error) {
	o.se.feed(p, 0, false, true)
	return len(p), nil
}

// feed takes output of the shell's terminal: for an exec-mode shell, first
// the setup's, which nobody sees. With tracked, end is the offset in the
// shell job's output after p; record says whether p goes into the audit
// log (what an earlier daemon recorded does not again).
func (se *Session) feed(p []byte, end int64, tracked, record bool) {
	se.mu.Lock()
	defer se.mu.Unlock()
	defer func() {
		close(se.wake)
		se.wake = make(chan struct{})
	}()
	exec := se.mode == SessionModeExec
	if exec && !se.live {
		se.out = append(se.out, p...)
		m := se.setup.FindIndex(se.out)
		if m == nil {
			if len(se.out) > OutputCap {
				se.out = append(se.out[:0], se.out[len(se.out)-OutputCap/2:]...)
			}
			return
		}
		p = bytes.Clone(se.out[m[1]:])
		se.out = se.out[:0]
		se.live = true
	}
	// Shown (and recorded) before a waiting command learns of its end
	// marker, so its output is in the log before its exit.
	if se.live {
		shown := p
		if exec {
			var marks []string
			shown, marks = se.marks.filter(p)
			for _, m := range marks {
				n, rc, _ := strings.Cut(m, "-")
				switch {
				case rc == "":
					se.running = n // the runner printed its start
				case n == se.running:
					se.running = ""
				}
			}
		}
		se.tty.Write("tty", shown)
		if record && tracked {
			se.rec.WriteEnd(shown, end)
		} else if record {
			se.rec.Write(shown)
		}
	}
	if exec {
		// Bounded: a command's output past OutputCap is dropped (and said
		// so) but the tail is kept so the end marker is still found.
		se.out = append(se.out, p...)
		if len(se.out) > 2*OutputCap {
			se.out = append(se.out[:OutputCap:OutputCap], se.out[len(se.out)-OutputCap:]...)
		}
	}
}

func (se *Session) end() {
	se.mu.Lock()
	defer se.mu.Unlock()
	se.ended = true
	close(se.wake)
	se.wake = make(chan struct{})
}

// skipped is told that the shell's output before offset to is no longer
// kept: a setup it held is long over, and an interactive terminal's
// offsets (which are the job's) go on from there.
func (se *Session) skipped(to int64) {
	se.mu.Lock()
	defer se.mu.Unlock()
	if se.mode == SessionModeInteractive {
		se.tty.Skip(to)
	}
	if !se.live {
		se.live = true
		se.out = se.out[:0]
	}
}

// finishSession records how the shell ended (st, or err when it was
// lost).
func (w *Work) finishSession(se *Session, st runtime.ExitStatus, err error) {
	se.rec.Flush()
	// Ended before any attached client hears of the exit, so one that
	// asks right after it is told so.
	se.end()
	if err != nil {
		err = fmt.Errorf("%w: session %s: shell lost: %v", errdefs.ErrUnavailable, se.id, err)
		why := err
		if _, _, e := se.tty.Status(); e.err != nil {
			why = e.err // deleted, or its sandbox destroyed: that is why
		}
		se.rec.Ended(runtime.ExitStatus{}, why)
		se.tty.Finish(ended{ExecResult{}, err, w.host.Now()})
		return
	}
	se.rec.Ended(st, nil)
	se.tty.Finish(ended{ExitResult(st), nil, w.host.Now()})
}
