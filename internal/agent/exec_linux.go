package agent

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// keepaliveInterval bounds how long a dead client goes unnoticed while
	// nothing else is written (a silent process, stdin backed up).
	keepaliveInterval = time.Second
	// After the process exits, output is drained until the pipes stay idle
	// for drainIdle (a background child may still hold them) or drainMax.
	drainIdle = 100 * time.Millisecond
	drainMax  = 2 * time.Second
)

// execRun is one running exec's state shared by its goroutines.
type execRun struct {
	s      *server
	c      *opConn
	pid    int
	tree   *tree
	exited atomic.Bool
	tty    *os.File // the terminal's master, when the process runs on one

	killOnce sync.Once
	killing  atomic.Bool
}

// killTree kills the whole tree once, whether for a timeout or a lost
// client. A second call returns when the first one's kill has finished.
func (r *execRun) killTree() {
	r.killing.Store(true)
	r.killOnce.Do(func() { r.s.tracker.kill(r.tree) })
}

// launched is a process just started, with its streams and its tree.
type launched struct {
	*child
	io      *execIO
	tree    *tree
	at      time.Time
	timeout time.Duration
}

// launch starts req's process, on a terminal when req asks for one, and
// tracks its tree. The caller closes l.io and removes l.tree.
func (s *server) launch(req Request) (*launched, error) {
	spec, err := s.prepare(req)
	if err != nil {
		return nil, err
	}
	io, err := openExecIO(req.TTY)
	if err != nil {
		return nil, err
	}
	marker := newMarker()
	env := append(spec.env, markerVar+"="+marker)
	sys := s.sysProcAttr()
	if io.tty != nil {
		// The terminal becomes the new session's controlling terminal.
		sys.Setctty, sys.Ctty = true, 0
	}
	pidfd := -1
	sys.PidFD = &pidfd
	ch, err := s.reaper.start(func() (pid, fd int, err error) {
		s.cfg.Thread(func() {
			pid, err = syscall.ForkExec(spec.path, spec.argv, &syscall.ProcAttr{
				Dir: spec.dir, Env: env, Files: io.childFds(), Sys: sys,
			})
		})
		return pid, pidfd, err
	})
	// The child has its copies; ours would keep its stdin open and its
	// output from ever reaching EOF.
	io.closeChild()
	if errors.Is(err, syscall.EAGAIN) {
		io.close()
		// fork fails with EAGAIN at the pids limit (or RLIMIT_NPROC).
		return nil, errorf(CodePidLimit, "start %s: the sandbox is at its pid limit (%v)", spec.argv[0], err)
	}
	if err != nil {
		io.close()
		return nil, fmt.Errorf("start %s: %w", spec.argv[0], err)
	}
	return &launched{child: ch, io: io, tree: s.tracker.add(ch.pid, marker), at: time.Now(), timeout: spec.timeout}, nil
}

func (s *server) exec(c *opConn, req Request) error {
	l, err := s.launch(req)
	if err != nil {
		return err
	}
	io, pid, start := l.io, l.pid, l.at
	defer io.close()
	r := &execRun{s: s, c: c, pid: pid, tree: l.tree, tty: io.tty}
	defer s.tracker.remove(r.tree)
	if err := c.fw.json(FrameStarted, StartedFrame{Pid: pid}); err != nil {
		r.killTree()
	}

	var timedOut atomic.Bool
	var timer *time.Timer
	if l.timeout > 0 {
		timer = time.AfterFunc(l.timeout, func() { timedOut.Store(true); r.killTree() })
	}
	done := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); r.pumpStdin(io.stdin, done) }()
	go func() { defer bg.Done(); r.keepalive(done) }()
	var out sync.WaitGroup
	for i, f := range io.outs {
		out.Add(1)
		go func() {
			defer out.Done()
			err := pumpOutput(f, &r.exited, func(p []byte) error { return r.c.fw.write(io.kinds[i], p) })
			if err != nil && !r.exited.Load() {
				r.killTree()
			}
		}()
	}

	res := s.reaper.wait(l.child)
	dur := time.Since(start)
	if timer != nil {
		timer.Stop()
	}
	// A process's tree lives as long as its root: what the root left
	// running is killed with it (a fork bomb returns at once and leaves
	// every member reparented to us), and the exit is reported only once
	// the whole tree is gone. Servers meant to outlive a command are
	// started as processes of their own.
	r.killTree()
	r.exited.Store(true)
	drain(&out, io.outs...)
	close(done)
	io.stdin.Close()
	if res.err != nil {
		s.sendError(c.fw, fmt.Errorf("wait for %d: %w", pid, res.err))
	} else {
		// Nothing to do if this fails: the client is gone and so is the process.
		_ = c.fw.json(FrameExit, exitFrame(res.status, timedOut.Load(), dur))
	}
	// Closing unblocks pumpStdin's read; the last frame went out first.
	c.conn.Close()
	bg.Wait()
	return nil
}

// execIO is an exec's standard streams: three pipes, or one terminal.
type execIO struct {
	child []*os.File // the process's ends, closed here once it has them
	stdin *os.File   // where input frames go
	outs  []*os.File // where output comes from, with its frame kind
	kinds []byte
	tty   *os.File // the terminal's master, for resizes; nil for pipes
}

func openExecIO(tty *TTYSize) (*execIO, error) {
	if tty != nil {
		master, peer, err := openPTY(*tty)
		if err != nil {
			return nil, err
		}
		return &execIO{child: []*os.File{peer, peer, peer}, stdin: master,
			outs: []*os.File{master}, kinds: []byte{FrameStdout}, tty: master}, nil
	}
	var pipes [3][2]*os.File // [stdin, stdout, stderr][read, write]
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			closePipes(&pipes)
			return nil, fmt.Errorf("exec pipe: %w", err)
		}
		pipes[i] = [2]*os.File{r, w}
	}
	return &execIO{
		child: []*os.File{pipes[0][0], pipes[1][1], pipes[2][1]},
		stdin: pipes[0][1],
		outs:  []*os.File{pipes[1][0], pipes[2][0]},
		kinds: []byte{FrameStdout, FrameStderr},
	}, nil
}

func (x *execIO) childFds() []uintptr {
	fds := make([]uintptr, len(x.child))
	for i, f := range x.child {
		fds[i] = f.Fd()
	}
	return fds
}

func (x *execIO) closeChild() {
	for _, f := range x.child {
		f.Close() // the terminal's peer three times: later ones are no-ops
	}
}

func (x *execIO) close() {
	x.stdin.Close()
	for _, f := range x.outs {
		f.Close()
	}
}

func exitFrame(ws unix.WaitStatus, timedOut bool, d time.Duration) ExitFrame {
	x := ExitFrame{TimedOut: timedOut, DurationMS: float64(d) / float64(time.Millisecond)}
	if ws.Signaled() {
		x.Signal = int(ws.Signal())
		x.Code = 128 + x.Signal
	} else {
		x.Code = ws.ExitStatus()
	}
	return x
}

func (s *server) sysProcAttr() *syscall.SysProcAttr {
	// No Pdeathsig: it fires when the forking Go thread exits, not the agent.
	a := &syscall.SysProcAttr{Setsid: true}
	if s.cfg.UID >= 0 {
		a.Credential = &syscall.Credential{Uid: uint32(s.cfg.UID), Gid: uint32(s.cfg.GID), Groups: []uint32{}}
	}
	return a
}

func closePipes(p *[3][2]*os.File) {
	for _, pair := range p {
		for _, f := range pair {
			if f != nil {
				f.Close()
			}
		}
	}
}

// pumpStdin feeds stdin frames to the process. Any other end of the
// connection than an end frame means the client is gone: kill the tree.
func (r *execRun) pumpStdin(stdin *os.File, done <-chan struct{}) {
	var buf []byte
	for {
		kind, p, err := readFrame(r.c.br, &buf)
		if err != nil || (kind != FrameData && kind != FrameEnd && kind != FrameResize) {
			select {
			case <-done:
			default:
				r.killTree()
			}
			return
		}
		switch {
		case kind == FrameResize:
			// The host checks sizes before it sends them; one that is
			// still refused leaves the terminal as it was, which is all a
			// failed resize can mean to the person at it. Without a
			// terminal there is nothing to resize: the size is not input.
			if r.tty != nil {
				_ = resize(r.tty, p)
			}
			continue
		case kind == FrameEnd && r.tty != nil:
			// A terminal has no end of input short of hanging up; the
			// client sends ^D for an EOF like a person would.
			continue
		case kind == FrameEnd:
			stdin.Close()
			continue
		}
		// A write error means the process closed stdin; keep reading
		// frames so a disconnect is still noticed.
		_, _ = stdin.Write(p)
	}
}

func (r *execRun) keepalive(done <-chan struct{}) {
	t := time.NewTicker(keepaliveInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if err := r.c.fw.write(FrameKeepalive, nil); err != nil {
				r.killTree()
				return
			}
		}
	}
}

// pumpOutput hands what f yields to write until EOF or write fails (its
// error is returned), and once exited is set only until f stays idle for
// drainIdle.
func pumpOutput(f *os.File, exited *atomic.Bool, write func([]byte) error) error {
	// Small until a read fills it: most commands print a line or nothing,
	// and the ones that stream get a pipe's worth per frame.
	buf := make([]byte, 2<<10)
	for {
		if exited.Load() {
			f.SetReadDeadline(time.Now().Add(drainIdle))
		}
		n, err := f.Read(buf)
		if n > 0 {
			if werr := write(buf[:n]); werr != nil {
				return werr
			}
			if n == len(buf) && n < 32<<10 {
				buf = make([]byte, 32<<10)
			}
		}
		if err != nil {
			return nil
		}
	}
}

// drain lets the output pumps finish after exit. Pipes still held by a
// background process would never reach EOF, so reading stops once they go
// idle, and in any case after drainMax.
func drain(out *sync.WaitGroup, pipes ...*os.File) {
	for _, f := range pipes {
		f.SetReadDeadline(time.Now().Add(drainIdle))
	}
	done := make(chan struct{})
	go func() { out.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainMax):
		for _, f := range pipes {
			f.Close()
		}
		<-done
	}
}
