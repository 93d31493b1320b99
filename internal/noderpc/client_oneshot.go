package noderpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/airlockhq/airlock/internal/runtime"
)

// The calls that do in one round trip what would take several: a job run
// to its end, a destroy that reads the final stats, a sandbox's handle
// without asking the node. A node older than them answers the first two
// with errNoRoute, and the client makes them of the older calls.

var (
	_ runtime.LazyGetter     = (*Runtime)(nil)
	_ runtime.OneShotRunner  = (*sandbox)(nil)
	_ runtime.DestroyStatser = (*sandbox)(nil)
)

// LazyGet returns sandbox id's handle without a round trip: a call on it
// answers ErrNotFound if the node has no such sandbox.
func (c *Runtime) LazyGet(_ context.Context, id string) (runtime.Sandbox, error) {
	if _, err := segment("sandbox", id); err != nil {
		return nil, err
	}
	return &sandbox{rt: c, id: id}, nil
}

// DestroyStats reads the sandbox's stats and destroys it in one call.
func (s *sandbox) DestroyStats(ctx context.Context) (runtime.FinalStats, error) {
	var f finalWire
	err := s.rt.call(ctx, http.MethodPost, s.path("destroy", nil), nil, &f)
	if errors.Is(err, errNoRoute) {
		st, serr := s.Stats(ctx)
		return runtime.FinalStats{Stats: st, Err: serr}, s.Destroy(ctx)
	}
	if err != nil {
		return runtime.FinalStats{}, err
	}
	final := runtime.FinalStats{Stats: f.Stats}
	if f.Error != nil {
		final.Err = f.Error.err()
	}
	return final, nil
}

// RunJob runs a job to its end in one call (see the package doc):
// cancelling ctx resets it, and the job goes on, as after a detach.
func (s *sandbox) RunJob(ctx context.Context, req runtime.ExecRequest, opts runtime.JobOptions, started func(runtime.JobInfo) error, out func(runtime.JobOutput) error) (runtime.JobEnd, error) {
	stdin := req.Stdin
	in := spawnWire{Request: toExecWire(req), Buffer: opts.Buffer, Meta: opts.Meta, CloseStdin: stdin == nil}
	// Request.Stdin says whether the job's stdin follows the request.
	in.Request.Stdout, in.Request.Stderr = false, false
	open, err := json.Marshal(in)
	if err != nil {
		return runtime.JobEnd{}, fmt.Errorf("%w: job request: %v", runtime.ErrInvalid, err)
	}
	var body io.Reader = bytes.NewReader(frame(frameRequest, open))
	var pw *io.PipeWriter
	if stdin != nil {
		// Closable: the HTTP client closes the body to end a call, which
		// stops the pump.
		var pr *io.PipeReader
		pr, pw = io.Pipe()
		body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(body, pr), pr}
	}
	st, err := s.rt.open(ctx, http.MethodPost, s.path("run", nil), body)
	if err == nil {
		var head jobInfoWire
		if err = st.head(&head); err != nil {
			st.close()
		} else {
			defer st.close()
			return s.followRun(st, head.info(), stdin, pw, started, out)
		}
	}
	if pw != nil {
		pw.Close()
	}
	if errors.Is(err, errNoRoute) {
		return runtime.RunJobSteps(ctx, s, req, opts, started, out)
	}
	return runtime.JobEnd{}, err
}

// followRun reads a run's stream after its head: the job's output, then
// its end.
func (s *sandbox) followRun(st *stream, info runtime.JobInfo, stdin io.Reader, pw *io.PipeWriter, started func(runtime.JobInfo) error, out func(runtime.JobOutput) error) (runtime.JobEnd, error) {
	if pw != nil {
		go pumpFrames(pw, stdin)
	}
	if err := started(info); err != nil {
		return runtime.JobEnd{}, err
	}
	return st.jobOutput("run", info.Pid, runtime.JobEnd{}, out)
}

// pumpFrames sends r to pw as data frames, then its end; a failing r
// cuts the request body, which the node sees as the job's stdin failing.
// As with os/exec, an r that blocks forever keeps the pump until it
// returns.
func pumpFrames(pw *io.PipeWriter, r io.Reader) {
	fw := frameWriter{w: pw}
	buf := make([]byte, dataChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 && fw.write(frameData, buf[:n]) != nil {
			return // the call has ended
		}
		if err == io.EOF {
			_ = fw.write(frameEnd, nil)
			pw.Close()
			return
		}
		if err != nil {
			pw.CloseWithError(err)
			return
		}
	}
}
