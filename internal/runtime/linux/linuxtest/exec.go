package linuxtest

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	airlockrt "github.com/airlockhq/airlock/internal/runtime"
)

// Exec runs req in sb (within two minutes) and returns its output and
// exit status; an error of the runtime fails the test.
func Exec(t testing.TB, sb airlockrt.Sandbox, req airlockrt.ExecRequest) (stdout, stderr string, st airlockrt.ExitStatus) {
	t.Helper()
	var out, errb bytes.Buffer
	req.Stdout, req.Stderr = &out, &errb
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := sb.Exec(ctx, req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Shell+strings.Join(req.Argv, " "), err)
	}
	return out.String(), errb.String(), st
}

// MustSh runs script with /bin/sh in sb and returns its stdout; a
// non-zero exit fails the test.
func MustSh(t testing.TB, sb airlockrt.Sandbox, script string) string {
	t.Helper()
	out, errs, st := Exec(t, sb, airlockrt.ExecRequest{Shell: script})
	if st.Code != 0 {
		t.Fatalf("%q exited %d: stdout %q stderr %q", script, st.Code, out, errs)
	}
	return out
}

// Buffer collects output (a terminal's, a process's) for a test to poll
// while it is written.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
