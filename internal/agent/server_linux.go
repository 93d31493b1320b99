package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Config is how the sandbox runtime sets the agent up.
type Config struct {
	// Thread, when set, runs f on the one OS thread every sandboxed
	// process is forked from (it carries per-thread state the children
	// must inherit: an empty capability bounding set, one landlock
	// domain). nil runs f on the calling goroutine's thread.
	Thread func(f func())

	UID, GID int      // sandbox user for processes and file ops; -1 = do not switch
	Root     string   // "/" in a sandbox; file-op paths resolve inside it
	Env      []string // base environment, KEY=VALUE
	Workdir  string   // default cwd of processes and base of relative file paths
	// Reap is set when the agent is PID 1: it then reaps every child,
	// orphans included, and nothing else in the process may wait for
	// children. Unset (unit tests) it waits only for the pids it started.
	Reap bool
}

// requestTimeout bounds how long a connection may take to send its request
// line, so idle connections do not pin goroutines.
const requestTimeout = 30 * time.Second

type server struct {
	cfg     Config
	rootFD  int
	reaper  *reaper
	tracker *tracker
	jobs    jobTable

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// Serve answers agent requests on ln until ctx is done, one goroutine per
// connection. On return ln is closed, every open connection has been closed
// (which kills the process trees they started) and every goroutine Serve
// started has ended.
func Serve(ctx context.Context, ln net.Listener, cfg Config) error {
	defer ln.Close()
	s, err := newServer(cfg)
	if err != nil {
		return err
	}
	defer unix.Close(s.rootFD)
	reapDone := make(chan struct{})
	stopReaper := make(chan struct{})
	go func() { defer close(reapDone); s.reaper.run(stopReaper) }()
	trackDone := make(chan struct{})
	stopTracker := make(chan struct{})
	go func() { defer close(trackDone); s.tracker.run(stopTracker) }()

	var wg sync.WaitGroup
	err = s.accept(ctx, ln, &wg)

	// Handlers wait for exit statuses, so the reaper outlives them.
	s.closeConns()
	wg.Wait()
	close(stopTracker)
	<-trackDone
	close(stopReaper)
	<-reapDone
	return err
}

func newServer(cfg Config) (*server, error) {
	if cfg.Root == "" {
		cfg.Root = "/"
	}
	if cfg.Workdir == "" {
		cfg.Workdir = "/"
	}
	if cfg.UID >= 0 && cfg.GID < 0 {
		return nil, fmt.Errorf("agent gid %d: must be set with uid %d", cfg.GID, cfg.UID)
	}
	if !path.IsAbs(cfg.Workdir) {
		return nil, fmt.Errorf("agent workdir %q: must be absolute", cfg.Workdir)
	}
	if err := cloexecInherited(); err != nil {
		return nil, err
	}
	fd, err := unix.Open(cfg.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open agent root %s: %w", cfg.Root, err)
	}
	if cfg.Reap && os.Getpid() != 1 {
		// Outside a pid namespace orphans would go to the host's init;
		// becoming a subreaper brings them to us as they would to PID 1.
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("become child subreaper: %w", err)
		}
	}
	if cfg.Thread == nil {
		cfg.Thread = func(f func()) { f() }
	}
	s := &server{
		cfg:     cfg,
		rootFD:  fd,
		reaper:  newReaper(cfg.Reap),
		tracker: newTracker(),
		conns:   map[net.Conn]struct{}{},
		jobs:    jobTable{m: map[int]*job{}},
	}
	s.tracker.marked = s.marked
	if cfg.Reap {
		s.tracker.childless = childless
	}
	return s, nil
}

// cloexecInherited marks every fd above stderr close-on-exec. Go does so
// for the fds it opens, but not for ones this process inherited (the
// listening socket among them): leaked into a sandbox process, that socket
// would let it accept the host's connections to the agent.
func cloexecInherited() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// close_range needs Linux 5.11 and may be filtered; walk the fds instead.
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list inherited fds: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("list inherited fds: %w", err)
	}
	for _, name := range names {
		if fd, err := strconv.Atoi(name); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

func (s *server) accept(ctx context.Context, ln net.Listener, wg *sync.WaitGroup) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	backoff := 5 * time.Millisecond
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED) {
				// Out of fds is transient: connections finishing free them.
				time.Sleep(backoff)
				backoff = min(2*backoff, time.Second)
				continue
			}
			return fmt.Errorf("agent accept: %w", err)
		}
		backoff = 5 * time.Millisecond
		s.mu.Lock()
		s.conns[conn] = struct{}{}
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handle(conn)
			s.mu.Lock()
			delete(s.conns, conn)
			s.mu.Unlock()
		}()
	}
}

func (s *server) closeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// handle serves one connection: one request, then its frames.
func (s *server) handle(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	fw := newFrameWriter(conn)
	conn.SetReadDeadline(time.Now().Add(requestTimeout))
	req, err := readRequest(br)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			s.sendError(fw, err)
		}
		return
	}
	conn.SetReadDeadline(time.Time{})
	c := &opConn{conn: conn, br: br, fw: fw}
	if err := s.dispatch(c, req); err != nil {
		s.sendError(fw, err)
	}
}

// opConn is what an operation handler gets: the connection's reader and
// the serialised frame writer.
type opConn struct {
	conn net.Conn
	br   *bufio.Reader
	fw   *frameWriter
}

func (s *server) dispatch(c *opConn, req Request) error {
	switch req.Op {
	case OpPing:
		return c.fw.json(FrameResult, PingResult{Version: ProtocolVersion})
	case OpExec:
		return s.exec(c, req)
	case OpSignal:
		if err := s.signal(req); err != nil {
			return err
		}
		return c.fw.json(FrameResult, struct{}{})
	case OpSpawn:
		return s.spawn(c, req)
	case OpAttach:
		return s.attach(c, req)
	case OpInput:
		return s.input(c, req)
	case OpJobs:
		return s.listJobs(c)
	case OpForget:
		if err := s.forget(req); err != nil {
			return err
		}
		return c.fw.json(FrameResult, struct{}{})
	case OpRead, OpWrite, OpStat, OpList, OpMkdir, OpRemove, OpRename:
		return s.asUser(func() error { return s.fileOp(c, req) })
	}
	return errorf(CodeInvalid, "unknown op %q", req.Op)
}

// sendError reports err to the client. Nothing more can be done when that
// write fails: the client is gone.
func (s *server) sendError(fw *frameWriter, err error) {
	_ = fw.json(FrameError, wireError(err))
}

// signal delivers a signal on the client's behalf. It refuses targets that
// would hit the agent itself (pid 1, its own group, broadcast pids): a
// SIGTERM there would end the sandbox, not the process the caller meant.
func (s *server) signal(req Request) error {
	if req.Signal < 0 || req.Signal > 64 {
		return errorf(CodeInvalid, "signal %d out of range", req.Signal)
	}
	self := os.Getpid()
	if req.Pid <= 1 || req.Pid == self || (req.Group && req.Pid == unix.Getpgrp()) {
		return errorf(CodeInvalid, "pid %d cannot be signalled", req.Pid)
	}
	target := req.Pid
	if req.Group {
		target = -req.Pid
	}
	if err := unix.Kill(target, unix.Signal(req.Signal)); err != nil {
		return fmt.Errorf("signal %d: %w", req.Pid, err)
	}
	return nil
}

// wireError maps an error to its protocol code. This is the one place errno
// values become codes; the client maps codes back to error kinds.
func wireError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	code := CodeInternal
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case unix.ENOENT, unix.ESRCH:
			code = CodeNotFound
		case unix.EACCES, unix.EPERM, unix.EROFS:
			code = CodePermission
		case unix.EEXIST, unix.ENOTEMPTY:
			code = CodeExists
		case unix.ENOTDIR:
			code = CodeNotDir
		case unix.EISDIR:
			code = CodeIsDir
		case unix.ENOSPC, unix.EDQUOT, unix.EFBIG:
			code = CodeNoSpace
		// The caller's to fix, not an outage: a path too long or looping,
		// a device that is not there, a value too large for the call.
		case unix.EINVAL, unix.ENAMETOOLONG, unix.ELOOP, unix.EXDEV, unix.E2BIG, unix.ENOEXEC, unix.EBUSY,
			unix.ENXIO, unix.ENODEV, unix.EOVERFLOW:
			code = CodeInvalid
		}
	}
	return &Error{Code: code, Message: err.Error()}
}
