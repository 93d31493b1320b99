package noderpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"strconv"

	"github.com/airlockhq/airlock/internal/egresshost"
	"github.com/airlockhq/airlock/internal/runtime"
)

const prefix = "/node/v1"

// server serves one runtime; conns holds the connections its sandboxes'
// listeners accepted until the client picks them up.
type server struct {
	rt     runtime.Runtime
	egress *egresshost.Host // nil: the control plane proxies the sandboxes' traffic
	mux    *http.ServeMux
	conns  connTable
}

// NewServer serves rt's methods under /node/v1/ (see the package doc).
// It does not serve /node/v1/status: the caller mounts both on one mux.
func NewServer(rt runtime.Runtime) http.Handler { return NewServerWith(rt, nil) }

// NewServerWith is NewServer whose node runs its sandboxes' egress
// proxies with eg.
func NewServerWith(rt runtime.Runtime, eg *egresshost.Host) http.Handler {
	s := &server{rt: rt, egress: eg, mux: http.NewServeMux(), conns: connTable{m: map[string]*pending{}}}
	s.routes()
	s.egressRoutes()
	s.streamRoutes()
	s.oneShotRoutes()
	// Every other route under the prefix: an older node than the client.
	s.mux.HandleFunc(prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		writeErrorStatus(w, http.StatusNotFound, fmt.Errorf("%w: %s %s: no such route on this node", runtime.ErrUnsupported, r.Method, r.URL.Path))
	})
	return s
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get(ProtocolHeader); v != strconv.Itoa(Protocol) {
		if v == "" {
			v = "none"
		}
		writeError(w, fmt.Errorf("%w: node API protocol %s: this node speaks protocol %d", runtime.ErrInvalid, v, Protocol))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// handle serves a call that returns once: f's result as JSON, or its
// error.
func (s *server) handle(pattern string, f func(r *http.Request) (any, error)) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		out, err := f(r)
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		// A client gone before the reply has nobody to tell.
		_ = json.NewEncoder(w).Encode(out)
	})
}

func (s *server) routes() {
	s.handle("POST "+prefix+"/sandboxes", func(r *http.Request) (any, error) {
		var spec runtime.Spec
		if err := decode(r, &spec); err != nil {
			return nil, err
		}
		sb, err := s.rt.Create(r.Context(), spec)
		if err != nil {
			return nil, err
		}
		return idReply{sb.ID()}, nil
	})
	s.handle("GET "+prefix+"/sandboxes", func(r *http.Request) (any, error) { return s.rt.List(r.Context()) })
	s.handle("GET "+prefix+"/sandboxes/{id}", func(r *http.Request) (any, error) {
		sb, err := s.sandbox(r)
		if err != nil {
			return nil, err
		}
		return idReply{sb.ID()}, nil
	})
	s.handle("DELETE "+prefix+"/sandboxes/{id}", func(r *http.Request) (any, error) {
		sb, err := s.sandbox(r)
		if errors.Is(err, runtime.ErrNotFound) {
			// Destroy is idempotent: the client's sandbox value outlives
			// the node's, which the runtime forgets once destroyed.
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		s.forgetEgress(sb.ID())
		return nil, sb.Destroy(r.Context())
	})
	s.handle("GET "+prefix+"/protections", func(r *http.Request) (any, error) { return s.rt.Protections(), nil })
	s.templateRoutes()
	s.lifecycleRoutes()
	s.handle("POST "+prefix+"/sandboxes/{id}/signal", func(r *http.Request) (any, error) {
		var a pidSignal
		sb, err := s.decodeFor(r, &a)
		if err != nil {
			return nil, err
		}
		return nil, sb.Signal(r.Context(), a.Pid, a.Signal)
	})
	s.handle("GET "+prefix+"/sandboxes/{id}/stats", func(r *http.Request) (any, error) {
		sb, err := s.sandbox(r)
		if err != nil {
			return nil, err
		}
		return sb.Stats(r.Context())
	})
	s.handle("GET "+prefix+"/sandboxes/{id}/agent-version", func(r *http.Request) (any, error) {
		av, err := sandboxAs[runtime.AgentVersioner](s, r, "say its agent's version")
		if err != nil {
			return nil, err
		}
		return av.AgentVersion(r.Context())
	})
	s.fileRoutes()
	s.jobRoutes()
}

func (s *server) templateRoutes() {
	s.handle("GET "+prefix+"/templates", func(r *http.Request) (any, error) {
		t, err := s.templater()
		if err != nil {
			return nil, err
		}
		return t.Templates(r.Context())
	})
	s.handle("GET "+prefix+"/templates/{name}", func(r *http.Request) (any, error) {
		t, err := s.templater()
		if err != nil {
			return nil, err
		}
		return t.Template(r.Context(), r.PathValue("name"))
	})
	s.handle("POST "+prefix+"/templates", func(r *http.Request) (any, error) {
		var a commitArgs
		if err := decode(r, &a); err != nil {
			return nil, err
		}
		t, err := s.templater()
		if err != nil {
			return nil, err
		}
		return t.CommitTemplate(r.Context(), a.Sandbox, a.Template)
	})
	s.handle("DELETE "+prefix+"/templates/{name}", func(r *http.Request) (any, error) {
		t, err := s.templater()
		if err != nil {
			return nil, err
		}
		return nil, t.DeleteTemplate(r.Context(), r.PathValue("name"))
	})
	s.templateMoveRoutes()
}

func (s *server) fileRoutes() {
	s.handle("POST "+prefix+"/sandboxes/{id}/files/stat", func(r *http.Request) (any, error) {
		var a pathArgs
		sb, err := s.decodeFor(r, &a)
		if err != nil {
			return nil, err
		}
		return sb.Stat(r.Context(), a.Path)
	})
	s.handle("POST "+prefix+"/sandboxes/{id}/files/list", func(r *http.Request) (any, error) {
		var a pathArgs
		sb, err := s.decodeFor(r, &a)
		if err != nil {
			return nil, err
		}
		return sb.ListDir(r.Context(), a.Path)
	})
	s.handle("POST "+prefix+"/sandboxes/{id}/files/mkdir", func(r *http.Request) (any, error) {
		var a pathArgs
		sb, err := s.decodeFor(r, &a)
		if err != nil {
			return nil, err
		}
		return nil, sb.MkdirAll(r.Context(), a.Path, a.Mode)
	})
	s.handle("POST "+prefix+"/sandboxes/{id}/files/remove", func(r *http.Request) (any, error) {
		var a pathArgs
		sb, err := s.decodeFor(r, &a)
		if err != nil {
			return nil, err
		}
		return nil, sb.Remove(r.Context(), a.Path, a.Recursive)
	})
	s.handle("POST "+prefix+"/sandboxes/{id}/files/rename", func(r *http.Request) (any, error) {
		var a renameArgs
		sb, err := s.decodeFor(r, &a)
		if err != nil {
			return nil, err
		}
		return nil, sb.Rename(r.Context(), a.From, a.To)
	})
	// The file's bytes are the request body (see the package doc).
	s.handle("PUT "+prefix+"/sandboxes/{id}/files", func(r *http.Request) (any, error) {
		sb, err := s.sandbox(r)
		if err != nil {
			return nil, err
		}
		mode, err := queryInt(r, "mode")
		if err != nil || mode < 0 || mode > math.MaxUint32 {
			return nil, fmt.Errorf("%w: file mode %q", runtime.ErrInvalid, r.URL.Query().Get("mode"))
		}
		n, err := sb.WriteFile(r.Context(), r.URL.Query().Get("path"), r.Body, fs.FileMode(mode))
		if err != nil {
			return nil, err
		}
		return sizeReply{n}, nil
	})
}

func (s *server) jobRoutes() {
	s.handle("POST "+prefix+"/sandboxes/{id}/jobs", func(r *http.Request) (any, error) {
		var a spawnWire
		if err := decode(r, &a); err != nil {
			return nil, err
		}
		jr, err := sandboxAs[runtime.JobRunner](s, r, "run jobs")
		if err != nil {
			return nil, err
		}
		info, err := jr.Spawn(r.Context(), a.Request.request(), runtime.JobOptions{Buffer: a.Buffer, Meta: a.Meta, CloseStdin: a.CloseStdin})
		if err != nil {
			return nil, err
		}
		return toJobInfoWire(info), nil
	})
	s.handle("GET "+prefix+"/sandboxes/{id}/jobs", func(r *http.Request) (any, error) {
		jr, err := sandboxAs[runtime.JobRunner](s, r, "run jobs")
		if err != nil {
			return nil, err
		}
		jobs, err := jr.Jobs(r.Context())
		if err != nil {
			return nil, err
		}
		out := make([]jobInfoWire, len(jobs))
		for i, j := range jobs {
			out[i] = toJobInfoWire(j)
		}
		return out, nil
	})
	s.handle("DELETE "+prefix+"/sandboxes/{id}/jobs/{pid}", func(r *http.Request) (any, error) {
		jr, pid, err := s.job(r)
		if err != nil {
			return nil, err
		}
		return nil, jr.Forget(r.Context(), pid)
	})
	// The input is the request body, as a file's is.
	s.handle("POST "+prefix+"/sandboxes/{id}/jobs/{pid}/input", func(r *http.Request) (any, error) {
		jr, pid, err := s.job(r)
		if err != nil {
			return nil, err
		}
		return nil, jr.Input(r.Context(), pid, r.Body, r.URL.Query().Get("close") == "true")
	})
}

func (s *server) sandbox(r *http.Request) (runtime.Sandbox, error) {
	return s.rt.Get(r.Context(), r.PathValue("id"))
}

// decodeFor decodes the request's JSON into v and finds its sandbox.
func (s *server) decodeFor(r *http.Request, v any) (runtime.Sandbox, error) {
	if err := decode(r, v); err != nil {
		return nil, err
	}
	return s.sandbox(r)
}

// sandboxAs finds the request's sandbox as the optional interface T,
// ErrUnsupported if this node's runtime does not offer it (it cannot
// what).
func sandboxAs[T any](s *server, r *http.Request, what string) (T, error) {
	var t T
	sb, err := s.sandbox(r)
	if err != nil {
		return t, err
	}
	t, ok := sb.(T)
	if !ok {
		return t, fmt.Errorf("%w: sandbox %s cannot %s on this node", runtime.ErrUnsupported, sb.ID(), what)
	}
	return t, nil
}

// job is the request's sandbox as a JobRunner and the job's pid.
func (s *server) job(r *http.Request) (runtime.JobRunner, int, error) {
	pid, err := strconv.Atoi(r.PathValue("pid"))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: job pid %q", runtime.ErrInvalid, r.PathValue("pid"))
	}
	jr, err := sandboxAs[runtime.JobRunner](s, r, "run jobs")
	return jr, pid, err
}

func (s *server) templater() (runtime.Templater, error) {
	t, ok := s.rt.(runtime.Templater)
	if !ok {
		return nil, fmt.Errorf("%w: this node's runtime keeps no templates", runtime.ErrUnsupported)
	}
	return t, nil
}

// decode reads a JSON request body of at most maxJSON bytes into v.
func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxJSON)).Decode(v); err != nil {
		return fmt.Errorf("%w: request body: %v", runtime.ErrInvalid, err)
	}
	return nil
}

// queryInt is the query parameter name, 0 when absent.
func queryInt(r *http.Request, name string) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q", runtime.ErrInvalid, name, s)
	}
	return v, nil
}

func writeError(w http.ResponseWriter, err error) {
	status, _ := toWire(err)
	writeErrorStatus(w, status, err)
}

func writeErrorStatus(w http.ResponseWriter, status int, err error) {
	_, we := toWire(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A client gone before the reply has nobody to tell.
	_ = json.NewEncoder(w).Encode(we)
}

// wireErr is err as a reply's error, nil for none.
func wireErr(err error) *wireError {
	if err == nil {
		return nil
	}
	_, we := toWire(err)
	return we
}
