package sandbox_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// TestSnapshotStreamResumes: a snapshot streamed as a tar, cut off half
// way and picked up at the bytes the receiver holds, makes a snapshot a
// sandbox starts from with every file, link, mode and owner.
func TestSnapshotStreamResumes(t *testing.T) {
	svc := newService(t)
	c := tenant(t, 0, 0)
	ctx := context.Background()
	sb := create(t, svc, c, sandbox.CreateRequest{})
	run(t, svc, c, sb.ID, `head -c 3M /dev/urandom > data && ln data hard && ln -s data soft && mkdir -p d/e && echo x > d/e/f &&
		chmod 0750 d && sha256sum data > sum`)
	rt := testRuntime(t)
	if _, err := rt.Snapshot(ctx, sb.ID, "tx-src"); err != nil {
		t.Fatal(err)
	}
	defer rt.DeleteSnapshot(ctx, "tx-src")
	var full bytes.Buffer
	if err := rt.ExportSnapshot(ctx, "tx-src", 0, &full); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	rt.ExportSnapshot(ctx, "tx-src", 0, &again)
	if !bytes.Equal(full.Bytes(), again.Bytes()) {
		t.Fatal("two exports of one snapshot differ: a cut transfer could not resume")
	}
	defer rt.DeleteSnapshot(ctx, "tx-dst")
	half := full.Len() / 2
	have, done, err := rt.ImportSnapshot(ctx, "tx-dst", "base", bytes.NewReader(full.Bytes()[:half]))
	if err != nil || done || have != int64(half) {
		t.Fatalf("half a stream: have %d, done %v, %v", have, done, err)
	}
	var rest bytes.Buffer
	if err := rt.ExportSnapshot(ctx, "tx-src", have, &rest); err != nil {
		t.Fatal(err)
	}
	if have, done, err = rt.ImportSnapshot(ctx, "tx-dst", "base", &rest); err != nil || !done || have != int64(full.Len()) {
		t.Fatalf("the rest: have %d of %d, done %v, %v", have, full.Len(), done, err)
	}
	child, err := rt.Create(ctx, runtime.Spec{ID: "tx-child-" + sb.ID[3:], Snapshot: "tx-dst"})
	if err != nil {
		t.Fatal(err)
	}
	defer child.Destroy(ctx)
	var out bytes.Buffer
	st, err := child.Exec(ctx, runtime.ExecRequest{Shell: `cd /home/user && sha256sum -c sum >/dev/null && echo sum-ok; stat -c '%h %U %a' data; stat -c '%U %a' d; readlink soft; cat d/e/f`, Stdout: &out, Stderr: &out})
	if err != nil || st.Code != 0 || out.String() != "sum-ok\n2 user 644\nuser 750\ndata\nx\n" {
		t.Errorf("from the streamed snapshot: exit %d %v: %q", st.Code, err, out.String())
	}
	// Garbage is refused, and leaves no snapshot.
	if _, _, err := rt.ImportSnapshot(ctx, "tx-bad", "base", bytes.NewReader(bytes.Repeat([]byte("x"), 4096))); err != nil {
		t.Logf("garbage: %v", err)
	}
	if _, err := rt.Create(ctx, runtime.Spec{ID: "tx-bad-" + sb.ID[3:], Snapshot: "tx-bad"}); err == nil {
		t.Error("a sandbox from a garbage stream")
	}
	rt.DeleteSnapshot(ctx, "tx-bad")
}
