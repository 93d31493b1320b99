package linux

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestWarmPool claims a pooled sandbox and checks that the create request's
// limits, environment and workdir apply to it, and that the pool refills.
func TestWarmPool(t *testing.T) {
	linuxtest.Require(t)
	state := linuxtest.StateDir(t)
	r, err := New(Config{StateDir: state, Binary: linuxtest.Init(t), PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Teardown(); err != nil {
			t.Errorf("teardown: %v", err)
		}
	}()
	waitPool := func() {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			r.pool.mu.Lock()
			n := len(r.pool.ready)
			r.pool.mu.Unlock()
			if n == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pool never filled (%d boot errors, last: %v)", r.pool.errs, r.pool.lastErr)
			}
		}
	}
	waitPool()
	ctx := context.Background()
	sb, err := r.Create(ctx, runtime.Spec{ID: "pooled", Limits: runtime.Limits{MemoryMB: 64}, Env: map[string]string{"X": "from-spec"}, Workdir: "/home/user/w"})
	if err != nil {
		t.Fatal(err)
	}
	if name := sb.(*sandbox).p.Name; !strings.HasPrefix(name, poolPrefix) {
		t.Fatalf("sandbox %s was not taken from the pool", name)
	}
	if out, _ := shOut(t, sb, "echo $X $(pwd) $(id -u)"); out != "from-spec /home/user/w 1000" {
		t.Errorf("env, workdir, user: %q", out)
	}
	// The request's 64 MiB replaced the pool's default limit.
	if _, st := shOut(t, sb, `python3 -c 'a = b"a" * (256 << 20)'`); !st.OOMKilled {
		t.Errorf("256 MiB allocation under a 64 MiB limit: %+v", st)
	}
	if ids, _ := r.List(ctx); len(ids) != 1 || ids[0] != "pooled" {
		t.Errorf("List = %v, want [pooled]", ids)
	}
	if _, err := r.Create(ctx, runtime.Spec{ID: "pooled"}); err == nil {
		t.Errorf("a second sandbox with the same id was created")
	}
	waitPool()
	if err := sb.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, "pooled"); err == nil {
		t.Errorf("Get after destroy succeeded")
	}
}

func shOut(t *testing.T, sb runtime.Sandbox, script string) (string, runtime.ExitStatus) {
	t.Helper()
	var out bytes.Buffer
	st, err := sb.Exec(context.Background(), runtime.ExecRequest{Shell: script, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out.String()), st
}
