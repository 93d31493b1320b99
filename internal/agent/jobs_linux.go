package agent

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/internal/outbuf"
)

// Job limits.
const (
	// DefaultJobBuffer and MaxJobBuffer bound the output a job keeps.
	DefaultJobBuffer = 1 << 20
	MaxJobBuffer     = 16 << 20
	// MaxJobs bounds the jobs kept, running or ended and not yet forgotten.
	MaxJobs = 256
	// MaxJobMeta bounds what the host keeps with a job.
	MaxJobMeta = 4 << 10
	// inputStall is how long a write to a job's stdin may block before
	// the input op looks whether its client is still there.
	inputStall = 200 * time.Millisecond
)

// A job is a process the agent runs on its own: unlike an exec's, its tree
// is not killed when the connection that started it closes, and its output
// is kept (bounded) for whoever attaches, at any offset, later. Its exit
// status is kept until the job is forgotten. The tree still ends with its
// root, as an exec's does.
type job struct {
	pid     int
	seq     uint64 // spawn order
	started time.Time
	tty     *os.File // the terminal's master, or nil
	meta    []byte
	out     *outbuf.Buffer[jobEnd]
	done    chan struct{} // closed when its root has exited

	inMu  sync.Mutex // one input op at a time; guards stdin
	stdin *os.File   // nil once closed
}

// jobEnd is how a job ended.
type jobEnd struct {
	exit ExitFrame
	err  string // set when its status could not be had
	at   time.Time
}

// jobTable is the agent's jobs by pid.
type jobTable struct {
	mu  sync.Mutex
	m   map[int]*job
	seq uint64
}

func (j *job) info() JobInfo {
	start, end := j.out.Span()
	_, done, how := j.out.Status()
	in := JobInfo{Pid: j.pid, StartedMS: j.started.UnixMilli(), TTY: j.tty != nil, Running: !done, Output: end, Dropped: start, Meta: j.meta}
	if done {
		in.EndedMS = how.at.UnixMilli()
		if how.err != "" {
			in.Error = how.err
		} else {
			exit := how.exit
			in.Exit = &exit
		}
	}
	return in
}

func (s *server) job(pid int) (*job, error) {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	if j := s.jobs.m[pid]; j != nil {
		return j, nil
	}
	return nil, errorf(CodeNotFound, "no job %d", pid)
}

// spawn starts a job and answers with its JobInfo.
func (s *server) spawn(c *opConn, req Request) error {
	if req.BufferBytes < 0 || req.BufferBytes > MaxJobBuffer {
		return errorf(CodeInvalid, "buffer_bytes %d: must be 0 (for %d) up to %d", req.BufferBytes, DefaultJobBuffer, MaxJobBuffer)
	}
	if len(req.Meta) > MaxJobMeta {
		return errorf(CodeInvalid, "meta of %d bytes: at most %d", len(req.Meta), MaxJobMeta)
	}
	size := orDefault(req.BufferBytes, DefaultJobBuffer)
	s.jobs.mu.Lock()
	if len(s.jobs.m) >= MaxJobs {
		s.jobs.mu.Unlock()
		return errorf(CodeInvalid, "%d jobs are kept: forget ended ones first", MaxJobs)
	}
	l, err := s.launch(req)
	if err != nil {
		s.jobs.mu.Unlock()
		return err
	}
	if req.Close {
		// Nothing to read: as an exec's /dev/null.
		l.io.stdin.Close()
	}
	s.jobs.seq++
	j := &job{pid: l.pid, seq: s.jobs.seq, started: l.at, tty: l.io.tty, meta: req.Meta, out: outbuf.New[jobEnd](size),
		done: make(chan struct{}), stdin: l.io.stdin}
	if req.Close {
		j.stdin = nil
	}
	// A pid is reused only after its process was reaped, so an entry
	// under it is an ended job, which the new one replaces.
	s.jobs.m[l.pid] = j
	s.jobs.mu.Unlock()
	go s.runJob(j, l)
	return c.fw.json(FrameResult, j.info())
}

func orDefault(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

// runJob keeps a job's output until it ends, then records how it ended.
func (s *server) runJob(j *job, l *launched) {
	var killOnce sync.Once
	kill := func() { killOnce.Do(func() { s.tracker.kill(l.tree) }) }
	var timedOut atomic.Bool
	var timer *time.Timer
	if l.timeout > 0 {
		timer = time.AfterFunc(l.timeout, func() { timedOut.Store(true); kill() })
	}
	var exited atomic.Bool
	var out sync.WaitGroup
	for i, f := range l.io.outs {
		w := j.out.Writer(streamName(l.io.kinds[i]))
		out.Add(1)
		go func() {
			defer out.Done()
			pumpOutput(f, &exited, func(p []byte) error { w.Write(p); return nil })
		}()
	}
	res := s.reaper.wait(l.child)
	dur := time.Since(l.at)
	if timer != nil {
		timer.Stop()
	}
	kill() // what the root left running goes with it, as for an exec
	exited.Store(true)
	close(j.done) // an input op still open ends, and lets go of stdin
	drain(&out, l.io.outs...)
	s.tracker.remove(l.tree)
	j.inMu.Lock()
	j.stdin = nil
	j.inMu.Unlock()
	l.io.close()
	end := jobEnd{at: time.Now()}
	if res.err != nil {
		end.err = fmt.Sprintf("wait for %d: %v", j.pid, res.err)
	} else {
		end.exit = exitFrame(res.status, timedOut.Load(), dur)
	}
	j.out.Finish(end)
}

// attach sends a job's output from req.Offset on and, with req.Follow,
// what it writes next until it ends; then its exit frame, or, when it is
// still running and not followed, its JobInfo. Closing the connection
// leaves the job running.
func (s *server) attach(c *opConn, req Request) error {
	j, err := s.job(req.Pid)
	if err != nil {
		return err
	}
	if _, end := j.out.Span(); req.Offset < 0 || req.Offset > end {
		return errorf(CodeInvalid, "offset %d: job %d has written %d bytes", req.Offset, j.pid, end)
	}
	var held *outbuf.Hold[jobEnd]
	if req.Hold {
		h := j.out.Hold(req.Offset)
		defer h.Release()
		held = h
	}
	gone := make(chan struct{})
	go func() {
		// The client sends nothing; anything, or the end, means it left.
		var b [1]byte
		c.br.Read(b[:])
		close(gone)
	}()
	tick := time.NewTicker(keepaliveInterval)
	defer tick.Stop()
	off := req.Offset
	for first := true; ; first = false {
		v := j.out.From(off)
		if first || v.Dropped > 0 {
			if err := c.fw.json(FrameAttached, AttachedFrame{Offset: off + v.Dropped, Dropped: v.Dropped}); err != nil {
				return nil
			}
		}
		for _, ch := range v.Chunks {
			kind := FrameStdout
			if ch.Stream == "stderr" {
				kind = FrameStderr
			}
			if err := c.fw.write(kind, ch.Data); err != nil {
				return nil
			}
		}
		off = v.Next
		if held != nil {
			held.Advance(off) // sent: the job may drop it now
		}
		switch {
		case v.Done && v.Ended.err != "":
			return errorf(CodeInternal, "job %d: %s", j.pid, v.Ended.err)
		case v.Done:
			return c.fw.json(FrameExit, v.Ended.exit)
		case !req.Follow:
			return c.fw.json(FrameResult, j.info())
		}
		for waiting := true; waiting; {
			select {
			case <-v.Wake:
				waiting = false
			case <-gone:
				return nil
			case <-tick.C:
				if err := c.fw.write(FrameKeepalive, nil); err != nil {
					return nil
				}
			}
		}
	}
}

// input writes the client's data frames to a job's stdin, resizes its
// terminal on resize frames, and, after the end frame, closes its stdin
// when req.Close is set.
func (s *server) input(c *opConn, req Request) error {
	j, err := s.job(req.Pid)
	if err != nil {
		return err
	}
	j.inMu.Lock()
	defer j.inMu.Unlock()
	if j.stdin == nil {
		return errorf(CodeInvalid, "job %d: its stdin is closed", j.pid)
	}
	type frame struct {
		kind byte
		p    []byte
	}
	frames := make(chan frame)
	gone := make(chan struct{})
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		defer close(gone)
		var buf []byte
		for {
			kind, p, err := readFrame(c.br, &buf)
			if err != nil {
				return
			}
			select {
			case frames <- frame{kind, slices.Clone(p)}:
			case <-quit:
				return
			}
			if kind == FrameEnd {
				return
			}
		}
	}()
	for {
		var f frame
		select {
		case f = <-frames:
		case <-gone:
			return nil // the client left mid-input: the job goes on
		case <-j.done:
			return errorf(CodeInvalid, "job %d has ended", j.pid)
		}
		switch f.kind {
		case FrameData:
			if err := j.write(f.p, gone); err != nil {
				return err
			}
		case FrameResize:
			if j.tty != nil {
				_ = resize(j.tty, f.p) // as for an exec on a terminal
			}
		case FrameEnd:
			if req.Close && j.tty == nil && j.stdin != nil {
				j.stdin.Close()
				j.stdin = nil
			}
			return c.fw.json(FrameResult, struct{}{})
		default:
			return fmt.Errorf("%w: frame %q in input", errProtocol, f.kind)
		}
	}
}

// write writes p to the job's stdin, giving up when the client leaves
// while the job does not read. j.inMu is held.
func (j *job) write(p []byte, gone <-chan struct{}) error {
	for len(p) > 0 {
		if j.stdin == nil {
			return errorf(CodeInvalid, "job %d: its stdin is closed", j.pid)
		}
		j.stdin.SetWriteDeadline(time.Now().Add(inputStall))
		n, err := j.stdin.Write(p)
		p = p[n:]
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			select {
			case <-gone:
				return nil
			case <-j.done:
				return errorf(CodeInvalid, "job %d has ended", j.pid)
			default:
			}
		default:
			return errorf(CodeInvalid, "job %d: its stdin is closed (%v)", j.pid, err)
		}
	}
	return nil
}

// listJobs sends every job's JobInfo, oldest first.
func (s *server) listJobs(c *opConn) error {
	s.jobs.mu.Lock()
	all := make([]*job, 0, len(s.jobs.m))
	for _, j := range s.jobs.m {
		all = append(all, j)
	}
	s.jobs.mu.Unlock()
	slices.SortFunc(all, func(a, b *job) int { return cmp.Compare(a.seq, b.seq) })
	for _, j := range all {
		if err := c.fw.json(FrameEntry, j.info()); err != nil {
			return err
		}
	}
	return c.fw.json(FrameResult, struct{}{})
}

// forget drops an ended job and its kept output and status.
func (s *server) forget(req Request) error {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	j := s.jobs.m[req.Pid]
	if j == nil {
		return errorf(CodeNotFound, "no job %d", req.Pid)
	}
	if _, done, _ := j.out.Status(); !done {
		return errorf(CodeInvalid, "job %d is running", req.Pid)
	}
	delete(s.jobs.m, req.Pid)
	return nil
}
