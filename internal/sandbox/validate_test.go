package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/teststore"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// stubRuntime creates sandboxes that exist only as names, so the rules that
// come before and around the runtime can be tested on any OS.
type stubRuntime struct {
	mu      sync.Mutex
	live    map[string]bool
	creates atomic.Int64
	fail    error // returned by Create when set
	readErr error // returned by every sandbox's ReadFile
}

func newStub() *stubRuntime { return &stubRuntime{live: map[string]bool{}} }

func (r *stubRuntime) Create(_ context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	r.creates.Add(1)
	if r.fail != nil {
		return nil, r.fail
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live[spec.ID] = true
	return stubSandbox{r: r, id: spec.ID}, nil
}

func (r *stubRuntime) Get(_ context.Context, id string) (runtime.Sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.live[id] {
		return nil, fmt.Errorf("%w: sandbox %s", runtime.ErrNotFound, id)
	}
	return stubSandbox{r: r, id: id}, nil
}

func (r *stubRuntime) List(context.Context) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id := range r.live {
		ids = append(ids, id)
	}
	return ids, nil
}

func (r *stubRuntime) Protections() []runtime.Protection { return nil }

// stubSandbox panics on anything but ID and Destroy: these tests must not
// reach further.
type stubSandbox struct {
	runtime.Sandbox
	r  *stubRuntime
	id string
}

func (s stubSandbox) ID() string { return s.id }

func (s stubSandbox) ReadFile(context.Context, string, io.Writer) (int64, error) {
	return 0, s.r.readErr
}

func (s stubSandbox) Destroy(context.Context) error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	delete(s.r.live, s.id)
	return nil
}

func stubService(t *testing.T, rt runtime.Runtime, opts sandbox.Options) (*sandbox.Service, store.Store) {
	t.Helper()
	st := teststore.Open(t)
	svc, err := sandbox.NewManager(context.Background(), st, rt, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc, st
}

func addTenant(t *testing.T, st store.Store, name string, maxSb int, maxMem int64) sandbox.Caller {
	t.Helper()
	if err := st.CreateTenant(context.Background(), tenancy.Tenant{ID: "t-" + name, Name: name, MaxSandboxes: maxSb, MaxMemoryMB: maxMem}); err != nil {
		t.Fatal(err)
	}
	return sandbox.Caller{TenantID: "t-" + name, KeyID: "k-" + name}
}

// TestCreateRefusesBadInput: every bad request gets its error kind and
// changes nothing, neither in the store nor in the runtime.
func TestCreateRefusesBadInput(t *testing.T) {
	rt := newStub()
	svc, st := stubService(t, rt, sandbox.Options{HostCPUs: 2, HostMemoryMB: 4096})
	c := addTenant(t, st, "a", 0, 0)
	bigMD := map[string]string{}
	for i := range sandbox.MaxMetadataPairs + 1 {
		bigMD[fmt.Sprint(i)] = "v"
	}
	long := strings.Repeat("x", sandbox.MaxMetadataBytes+1)
	for _, tc := range []struct {
		name string
		req  sandbox.CreateRequest
		want error
	}{
		{"unknown template", sandbox.CreateRequest{Template: "ubuntu"}, sandbox.ErrNotFound},
		{"negative cpus", sandbox.CreateRequest{CPUs: -1}, sandbox.ErrInvalid},
		{"negative memory", sandbox.CreateRequest{MemoryMB: -1}, sandbox.ErrInvalid},
		{"negative pids", sandbox.CreateRequest{Pids: -1}, sandbox.ErrInvalid},
		{"negative disk", sandbox.CreateRequest{DiskMB: -5}, sandbox.ErrInvalid},
		{"tiny memory", sandbox.CreateRequest{MemoryMB: 1}, sandbox.ErrInvalid},
		{"more cpus than the host", sandbox.CreateRequest{CPUs: 3}, sandbox.ErrLimitExceeded},
		{"more memory than the host", sandbox.CreateRequest{MemoryMB: 8192}, sandbox.ErrLimitExceeded},
		{"negative timeout", sandbox.CreateRequest{TimeoutS: -1}, sandbox.ErrInvalid},
		{"timeout over a day", sandbox.CreateRequest{TimeoutS: 86401}, sandbox.ErrInvalid},
		{"empty env name", sandbox.CreateRequest{Env: map[string]string{"": "x"}}, sandbox.ErrInvalid},
		{"env name with =", sandbox.CreateRequest{Env: map[string]string{"A=B": "x"}}, sandbox.ErrInvalid},
		{"env value with NUL", sandbox.CreateRequest{Env: map[string]string{"A": "x\x00"}}, sandbox.ErrInvalid},
		{"too much metadata", sandbox.CreateRequest{Metadata: bigMD}, sandbox.ErrInvalid},
		{"long metadata key", sandbox.CreateRequest{Metadata: map[string]string{long: "v"}}, sandbox.ErrInvalid},
		{"long metadata value", sandbox.CreateRequest{Metadata: map[string]string{"k": long}}, sandbox.ErrInvalid},
		{"relative workdir", sandbox.CreateRequest{Workdir: "src"}, sandbox.ErrInvalid},
		{"workdir name too long", sandbox.CreateRequest{Workdir: "/" + strings.Repeat("w", 256)}, sandbox.ErrInvalid},
		{"metadata key with an escape", sandbox.CreateRequest{Metadata: map[string]string{"\x1b[31mowner": "v"}}, sandbox.ErrInvalid},
		{"metadata key with NUL", sandbox.CreateRequest{Metadata: map[string]string{"k\x00": "v"}}, sandbox.ErrInvalid},
		{"metadata value with NUL", sandbox.CreateRequest{Metadata: map[string]string{"k": "v\x00"}}, sandbox.ErrInvalid},
		{"metadata value with a newline", sandbox.CreateRequest{Metadata: map[string]string{"k": "a\nowner=root"}}, sandbox.ErrInvalid},
		{"metadata value with a bidi override", sandbox.CreateRequest{Metadata: map[string]string{"k": "\u202egnp.exe"}}, sandbox.ErrInvalid},
		{"metadata value not UTF-8", sandbox.CreateRequest{Metadata: map[string]string{"k": "\xff"}}, sandbox.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.Create(context.Background(), c, tc.req)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if l, _ := st.ListSandboxes(context.Background(), sandboxrec.Filter{}); len(l) != 0 || rt.creates.Load() != 0 {
		t.Errorf("refused creates left %d records and made %d runtime calls", len(l), rt.creates.Load())
	}
}

func TestTokenCannotCreate(t *testing.T) {
	svc, st := stubService(t, newStub(), sandbox.Options{})
	c := addTenant(t, st, "a", 0, 0)
	c.KeyID, c.SandboxID = "", "sb-0000000000000000"
	if _, err := svc.Create(context.Background(), c, sandbox.CreateRequest{}); !errors.Is(err, sandbox.ErrInvalid) {
		t.Fatalf("create with a sandbox token: %v, want ErrInvalid", err)
	}
}

// TestQuotaUnderRace: concurrent creates never overshoot the tenant's
// sandbox quota.
func TestQuotaUnderRace(t *testing.T) {
	rt := newStub()
	svc, st := stubService(t, rt, sandbox.Options{})
	c := addTenant(t, st, "a", 3, 0)
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			_, err := svc.Create(context.Background(), c, sandbox.CreateRequest{})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, sandbox.ErrLimitExceeded):
				limited.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 3 || limited.Load() != 17 {
		t.Errorf("%d created, %d refused; want 3 and 17", ok.Load(), limited.Load())
	}
}

// TestCreateFailureIsRecorded: a runtime failure leaves a failed record
// with the reason, frees the quota, and maps to the right kind.
func TestCreateFailureIsRecorded(t *testing.T) {
	rt := newStub()
	svc, st := stubService(t, rt, sandbox.Options{})
	c := addTenant(t, st, "a", 1, 0)
	for _, tc := range []struct {
		fail, want error
	}{
		{errors.New("boot: out of uid ranges"), sandbox.ErrUnavailable},
		{fmt.Errorf("%w: bad limits", runtime.ErrInvalid), sandbox.ErrInvalid},
	} {
		rt.fail = tc.fail
		if _, err := svc.Create(context.Background(), c, sandbox.CreateRequest{}); !errors.Is(err, tc.want) {
			t.Errorf("runtime error %v: got %v, want %v", tc.fail, err, tc.want)
		}
	}
	failed, _ := st.ListSandboxes(context.Background(), sandboxrec.Filter{TenantID: c.TenantID, State: sandboxrec.Failed})
	if len(failed) != 2 || !strings.Contains(failed[0].Reason+failed[1].Reason, "out of uid ranges") {
		t.Errorf("failed records: %+v", failed)
	}
	rt.fail = nil
	if _, err := svc.Create(context.Background(), c, sandbox.CreateRequest{}); err != nil {
		t.Errorf("failed creates still count against the quota: %v", err)
	}
}

func TestSetTimeoutBounds(t *testing.T) {
	svc, st := stubService(t, newStub(), sandbox.Options{})
	c := addTenant(t, st, "a", 0, 0)
	sb, err := svc.Create(context.Background(), c, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, -time.Second, sandbox.MaxTimeout + time.Second} {
		if _, err := svc.SetTimeout(context.Background(), c, sb.ID, d); !errors.Is(err, sandbox.ErrInvalid) {
			t.Errorf("SetTimeout(%v): %v, want ErrInvalid", d, err)
		}
	}
}

// TestCloseStopsReaper: the reaper goroutine ends with Close (and a second
// Close is harmless).
func TestCloseStopsReaper(t *testing.T) {
	st := teststore.Open(t) // its own goroutines are not the Service's
	before := goruntime.NumGoroutine()
	svc, err := sandbox.NewManager(context.Background(), st, newStub(), sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Close()
	svc.Close()
	for deadline := time.Now().Add(5 * time.Second); goruntime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before NewManager", goruntime.NumGoroutine(), before)
		}
	}
}

func TestNewIDs(t *testing.T) {
	svc, st := stubService(t, newStub(), sandbox.Options{})
	c := addTenant(t, st, "a", 0, 0)
	sb, err := svc.Create(context.Background(), c, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sb.ID) != 19 || !strings.HasPrefix(sb.ID, "sb-") || strings.Trim(sb.ID[3:], "0123456789abcdef") != "" {
		t.Errorf("id %q is not sb- and 16 lowercase hex digits", sb.ID)
	}
}

func TestResolvePath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a.txt", "/home/user/a.txt"},
		{"./d/../b", "/home/user/b"},
		{"../../etc/passwd", "/etc/passwd"},
		{"../../../../../etc/passwd", "/etc/passwd"},
		{"/tmp//x/", "/tmp/x"},
		{"/", "/"},
	} {
		got, err := sandbox.ResolvePath(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ResolvePath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "a\x00b"} {
		if _, err := sandbox.ResolvePath(bad); !errors.Is(err, sandbox.ErrInvalid) {
			t.Errorf("ResolvePath(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

// FuzzResolvePath: whatever the API sends, the runtime gets an absolute,
// clean path without "..", and without NUL.
func FuzzResolvePath(f *testing.F) {
	for _, s := range []string{"a", "../../etc/passwd", "/x/../../y", "./", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := sandbox.ResolvePath(p)
		if err != nil {
			return
		}
		if !strings.HasPrefix(got, "/") || strings.Contains(got, "\x00") || strings.Contains("/"+got+"/", "/../") || strings.Contains(got, "//") {
			t.Errorf("ResolvePath(%q) = %q", p, got)
		}
	})
}

// TestLimitsAgainstTheLargestNode: with sandboxes placed on other hosts,
// what one sandbox may ask for is bounded by the largest node, not by the
// control plane's own host; before any node has told its size, placement
// decides.
func TestLimitsAgainstTheLargestNode(t *testing.T) {
	cpus, mem, known := 8, int64(16384), true
	svc, st := stubService(t, newStub(), sandbox.Options{HostCPUs: 2, HostMemoryMB: 4096,
		Largest: func() (int, int64, bool) { return cpus, mem, known }})
	c := addTenant(t, st, "a", 0, 0)
	ctx := context.Background()
	sb, err := svc.Create(ctx, c, sandbox.CreateRequest{CPUs: 6, MemoryMB: 12288})
	if err != nil {
		t.Fatalf("6 cpus, 12 GiB on an 8-cpu, 16 GiB node: %v", err)
	}
	svc.Delete(ctx, c, sb.ID)
	for _, req := range []sandbox.CreateRequest{{CPUs: 9}, {MemoryMB: 16385}} {
		_, err := svc.Create(ctx, c, req)
		if !errors.Is(err, sandbox.ErrLimitExceeded) || !strings.Contains(err.Error(), "the largest node has") {
			t.Errorf("%+v: %v, want limit exceeded naming the largest node", req, err)
		}
	}
	known = false
	sb, err = svc.Create(ctx, c, sandbox.CreateRequest{CPUs: 9})
	if err != nil {
		t.Fatalf("9 cpus before any node reported: %v (placement decides)", err)
	}
	svc.Delete(ctx, c, sb.ID)
}
