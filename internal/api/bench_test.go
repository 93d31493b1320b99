package api_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/api"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/store/teststore"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// BenchmarkCycle measures what the API adds to create -> exec -> delete:
// the real HTTP server, client, store and service over a runtime that does
// nothing, so every microsecond reported is the API's own. It reports the
// cycle's percentiles; `airlock bench api` shows the same cycle over the
// Linux runtime.
func BenchmarkCycle(b *testing.B) {
	ctx := context.Background()
	st := teststore.Open(b)
	key, hash := api.NewKey()
	if err := st.CreateTenant(ctx, tenancy.Tenant{ID: "t1", Name: "t1"}); err != nil {
		b.Fatal(err)
	}
	if err := st.CreateKey(ctx, tenancy.Key{ID: "k1", TenantID: "t1", Hash: hash}); err != nil {
		b.Fatal(err)
	}
	mgr, err := sandbox.NewManager(ctx, st, &nopRuntime{live: map[string]bool{}}, sandbox.Options{HostMemoryMB: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer mgr.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: api.New(mgr, st, api.Options{})}
	go srv.Serve(ln)
	defer srv.Close()
	c := client.New("http://"+ln.Addr().String(), key)

	d := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		sb, err := c.CreateSandbox(ctx, client.CreateRequest{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Exec(ctx, sb.ID, client.ExecRequest{Cmd: []string{"true"}}); err != nil {
			b.Fatal(err)
		}
		if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t0))
	}
	slices.Sort(d)
	for _, q := range []float64{50, 95, 99} {
		i := min(len(d)-1, int(q/100*float64(len(d))))
		b.ReportMetric(float64(d[i].Microseconds())/1000, fmt.Sprintf("p%g-ms", q))
	}
}

// nopRuntime's sandboxes exist as names; exec succeeds at once.
type nopRuntime struct {
	mu   sync.Mutex
	live map[string]bool
}

func (r *nopRuntime) Create(_ context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live[spec.ID] = true
	return nopSandbox{r: r, id: spec.ID}, nil
}

func (r *nopRuntime) Get(_ context.Context, id string) (runtime.Sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.live[id] {
		return nil, fmt.Errorf("%w: %s", runtime.ErrNotFound, id)
	}
	return nopSandbox{r: r, id: id}, nil
}

func (r *nopRuntime) List(context.Context) ([]string, error) { return nil, nil }

func (r *nopRuntime) Protections() []runtime.Protection { return nil }

// nopSandbox panics on anything but ID, Exec and Destroy.
type nopSandbox struct {
	runtime.Sandbox
	r  *nopRuntime
	id string
}

func (s nopSandbox) ID() string { return s.id }

func (s nopSandbox) Exec(context.Context, runtime.ExecRequest) (runtime.ExitStatus, error) {
	return runtime.ExitStatus{}, nil
}

func (s nopSandbox) Destroy(context.Context) error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	delete(s.r.live, s.id)
	return nil
}
