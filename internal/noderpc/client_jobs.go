package noderpc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

func (s *sandbox) jobPath(pid int, op string, q url.Values) string {
	return s.path("jobs/"+strconv.Itoa(pid)+op, q)
}

func (s *sandbox) Spawn(ctx context.Context, req runtime.ExecRequest, opts runtime.JobOptions) (runtime.JobInfo, error) {
	var info jobInfoWire
	in := spawnWire{Request: toExecWire(req), Buffer: opts.Buffer, Meta: opts.Meta, CloseStdin: opts.CloseStdin}
	// The job's streams are not used: none cross.
	in.Request.Stdin, in.Request.Stdout, in.Request.Stderr = false, false, false
	if err := s.rt.call(ctx, http.MethodPost, s.path("jobs", nil), in, &info); err != nil {
		return runtime.JobInfo{}, err
	}
	return info.info(), nil
}

func (s *sandbox) Jobs(ctx context.Context) ([]runtime.JobInfo, error) {
	var list []jobInfoWire
	if err := s.rt.call(ctx, http.MethodGet, s.path("jobs", nil), nil, &list); err != nil {
		return nil, err
	}
	jobs := make([]runtime.JobInfo, len(list))
	for i, j := range list {
		jobs[i] = j.info()
	}
	return jobs, nil
}

func (s *sandbox) Forget(ctx context.Context, pid int) error {
	return s.rt.call(ctx, http.MethodDelete, s.jobPath(pid, "", nil), nil, nil)
}

func (s *sandbox) Input(ctx context.Context, pid int, r io.Reader, closeStdin bool) error {
	src := newUpload(r)
	q := url.Values{"close": {strconv.FormatBool(closeStdin)}}
	if err := s.rt.send(ctx, http.MethodPost, s.jobPath(pid, "/input", q), src.pr, nil); err != nil {
		return src.failed(fmt.Sprintf("node input %d", pid), err)
	}
	return nil
}

// Attach calls out for each piece of output the node's runtime hands its
// own callback, with the same fields. Cancelling ctx detaches.
func (s *sandbox) Attach(ctx context.Context, pid int, offset int64, mode runtime.AttachMode, out func(runtime.JobOutput) error) (runtime.JobEnd, error) {
	end := runtime.JobEnd{Next: offset}
	q := url.Values{"offset": {strconv.FormatInt(offset, 10)}, "mode": {strconv.Itoa(int(mode))}}
	st, err := s.rt.open(ctx, http.MethodGet, s.jobPath(pid, "/output", q), nil)
	if err != nil {
		return end, err
	}
	defer st.close()
	return st.jobOutput("attach", pid, end, out)
}

// jobOutput reads a job's output frames to out, then its end (the r
// frame); end is where the output starts. call names the call in
// errors.
func (st *stream) jobOutput(call string, pid int, end runtime.JobEnd, out func(runtime.JobOutput) error) (runtime.JobEnd, error) {
	for {
		kind, p, err := st.next()
		if err != nil {
			return end, err
		}
		switch kind {
		case frameJob:
			o, err := decodeJobOutput(p)
			if err != nil {
				return end, st.violation(err.Error())
			}
			if err := out(o); err != nil {
				return end, fmt.Errorf("node %s %d: %w", call, pid, err)
			}
			end.Next = o.Offset + int64(len(o.Data))
		case frameResult:
			var w jobEndWire
			if err := json.Unmarshal(p, &w); err != nil {
				return end, st.violation("bad " + call + " result")
			}
			return w.end(), nil
		default:
			return end, st.violation(fmt.Sprintf("frame %q in the stream of a job's %s", kind, call))
		}
	}
}

// jobStdin is a job's stdin held open on the node. Each write and resize
// is answered by the node with what the runtime's own made of it.
type jobStdin struct {
	pid     int
	d       *duplex
	st      *stream
	writeMu sync.Mutex // a Write's chunks go together
	closed  sync.Once
}

var _ runtime.JobStdin = (*jobStdin)(nil)

// OpenInput holds job pid's stdin open on the node until Close or ctx
// ends.
func (s *sandbox) OpenInput(ctx context.Context, pid int) (runtime.JobStdin, error) {
	d := newDuplex()
	st, err := s.rt.open(ctx, http.MethodPost, s.jobPath(pid, "/stdin", nil), d.pr)
	if err == nil {
		if err = st.head(nil); err != nil {
			st.close()
		}
	}
	if err != nil {
		d.pw.Close()
		return nil, err
	}
	in := &jobStdin{pid: pid, d: d, st: st}
	go in.read()
	return in, nil
}

func (in *jobStdin) read() {
	defer in.st.close()
	for {
		kind, p, err := in.st.next()
		switch {
		case err != nil:
			in.d.finish(err)
			return
		case kind == frameReply:
			in.d.reply(p)
		case kind == frameEnd:
			in.d.finish(nil)
			return
		default:
			in.d.finish(in.st.violation(fmt.Sprintf("frame %q on a job's stdin", kind)))
			return
		}
	}
}

// do sends one frame and returns the runtime's answer to it.
func (in *jobStdin) do(kind byte, p []byte) error {
	r, err := in.d.call(kind, p)
	if err != nil {
		return fmt.Errorf("node input %d: %w", in.pid, err)
	}
	if r.Error != nil {
		return r.Error.err()
	}
	return nil
}

func (in *jobStdin) Write(p []byte) (int, error) {
	in.writeMu.Lock()
	defer in.writeMu.Unlock()
	n := 0
	for n < len(p) {
		chunk := p[n:min(len(p), n+dataChunk)]
		if err := in.do(frameData, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
	}
	return n, nil
}

func (in *jobStdin) Resize(size runtime.TTYSize) error {
	b, err := json.Marshal(size)
	if err != nil {
		return err
	}
	return in.do(frameResize, b)
}

// Close lets the job's stdin go and waits until the node has (bounded by
// closeWait); the job and its stdin go on.
func (in *jobStdin) Close() error {
	in.closed.Do(func() {
		in.d.pw.Close()
		waitOrAbandon(in.d.done, in.st)
	})
	return nil
}

// waitOrAbandon waits for done, or, after closeWait, abandons the call
// and then waits: a node that stopped answering must not hold a Close.
func waitOrAbandon(done <-chan struct{}, st *stream) {
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		st.close()
		<-done
	}
}
