package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"hash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
)

// heapWatch records the largest HeapInuse seen at its samples.
type heapWatch struct {
	max  uint64
	next int64
}

func (w *heapWatch) sample(pos int64) {
	if pos < w.next {
		return
	}
	w.next = pos + 32<<20
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	w.max = max(w.max, ms.HeapInuse)
}

// genReader produces n pseudo-random bytes without holding them, hashing
// what it hands out and sampling the heap as it goes.
type genReader struct {
	src   *rand.ChaCha8
	left  int64
	pos   int64
	sum   hash.Hash
	watch *heapWatch
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.left)]
	g.src.Read(p)
	g.sum.Write(p)
	g.left -= int64(len(p))
	g.pos += int64(len(p))
	g.watch.sample(g.pos)
	return len(p), nil
}

type hashWriter struct {
	sum   hash.Hash
	pos   int64
	watch *heapWatch
}

func (h *hashWriter) Write(p []byte) (int, error) {
	h.sum.Write(p)
	h.pos += int64(len(p))
	h.watch.sample(h.pos)
	return len(p), nil
}

// A 1 GiB file goes through the agent both ways with memory bounded by a
// few frames, not by the file.
func TestLargeFileBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 2 GiB through the disk")
	}
	const size = 1 << 30
	const limit = 64 << 20
	root := t.TempDir()
	c := startServer(t, Config{UID: -1, GID: -1, Root: root, Workdir: "/"})
	ctx := context.Background()
	goruntime.GC()

	watch := &heapWatch{}
	gen := &genReader{src: rand.NewChaCha8([32]byte{1}), left: size, sum: sha256.New(), watch: watch}
	n, err := c.WriteFile(ctx, "/big", gen, 0o600)
	if err != nil || n != size {
		t.Fatalf("WriteFile = %d, %v", n, err)
	}
	fi, err := os.Stat(filepath.Join(root, "big"))
	if err != nil || fi.Size() != size {
		t.Fatalf("on disk: %v, %v", fi, err)
	}
	hw := &hashWriter{sum: sha256.New(), watch: watch}
	if n, err := c.ReadFile(ctx, "/big", hw); err != nil || n != size {
		t.Fatalf("ReadFile = %d, %v", n, err)
	}
	if want, got := gen.sum.Sum(nil), hw.sum.Sum(nil); !bytes.Equal(want, got) {
		t.Errorf("sha256 after round trip = %x, want %x", got, want)
	}
	if watch.max > limit {
		t.Errorf("heap in use peaked at %d MiB, want under %d MiB", watch.max>>20, limit>>20)
	}
	t.Logf("peak heap in use: %d MiB", watch.max>>20)
}
