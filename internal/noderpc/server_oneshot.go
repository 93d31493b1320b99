package noderpc

import (
	"errors"
	"io"
	"net/http"

	"github.com/airlockhq/airlock/internal/runtime"
)

// finalWire is the reply of a destroy that read the final stats.
type finalWire struct {
	Stats runtime.Stats `json:"stats"`
	Error *wireError    `json:"error,omitempty"` // why there is no reading
}

func (s *server) oneShotRoutes() {
	s.handle("POST "+prefix+"/sandboxes/{id}/destroy", func(r *http.Request) (any, error) {
		sb, err := s.sandbox(r)
		if errors.Is(err, runtime.ErrNotFound) {
			// Destroyed already: no error, and no reading.
			return finalWire{Error: wireErr(err)}, nil
		}
		if err != nil {
			return nil, err
		}
		s.forgetEgress(sb.ID())
		final, err := runtime.DestroyStats(r.Context(), sb)
		if err != nil {
			return nil, err
		}
		return finalWire{Stats: final.Stats, Error: wireErr(final.Err)}, nil
	})
	s.mux.HandleFunc("POST "+prefix+"/sandboxes/{id}/run", s.runJob)
}

// runJob runs a job to its end (runtime.RunJob on the node's runtime):
// the request is a q frame with the job's spawnWire, then, when it says
// so, the job's stdin as d frames and a z; the response a head with the
// JobInfo, the job's output as j frames, and its JobEnd.
func (s *server) runJob(w http.ResponseWriter, r *http.Request) {
	in := &frameReader{r: r.Body}
	var a spawnWire
	if err := in.request("job", &a); err != nil {
		writeError(w, err)
		return
	}
	jr, err := sandboxAs[runtime.JobRunner](s, r, "run jobs")
	if err != nil {
		writeError(w, err)
		return
	}
	req := a.Request.request()
	if a.Request.Stdin {
		// Fed from the body by a goroutine of this handler's, stopped
		// before it returns: the runtime's Input may read on after.
		pr, pw := io.Pipe()
		req.Stdin = pr
		fed := make(chan struct{})
		go func() {
			defer close(fed)
			feedStdin(in, pw)
		}()
		defer func() {
			pr.CloseWithError(io.ErrClosedPipe)
			<-fed
		}()
	}
	fw := responseFrames(w)
	var buf []byte
	end, err := runtime.RunJob(r.Context(), jr, req, runtime.JobOptions{Buffer: a.Buffer, Meta: a.Meta, CloseStdin: a.CloseStdin},
		func(info runtime.JobInfo) error { return fw.json(frameHead, toJobInfoWire(info)) },
		func(o runtime.JobOutput) error {
			buf = appendJobOutput(buf[:0], o)
			return fw.write(frameJob, buf)
		})
	if err != nil {
		fw.fail(w, err)
		return
	}
	if a.Request.Stdin {
		// The deferred wait for the stdin's feeder may wait for the
		// client, which ends its body once it has the result.
		_ = fw.json(frameResult, toJobEndWire(end))
		return
	}
	_ = fw.final(frameResult, toJobEndWire(end))
}

// feedStdin writes the d frames of in to pw until a z frame (pw's end)
// or the body's (pw fails with it).
func feedStdin(in *frameReader, pw *io.PipeWriter) {
	for {
		kind, p, err := in.next()
		switch {
		case err != nil:
			// A body cut short fails the job's stdin as a local caller's
			// failing reader would.
			pw.CloseWithError(err)
			return
		case kind == frameEnd:
			pw.Close()
			return
		case kind == frameData:
			if _, err := pw.Write(p); err != nil {
				return // nothing reads the job's stdin any more
			}
		}
	}
}
