package images

import (
	"context"
	"crypto/rand"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestImportProgress(t *testing.T) {
	dst := newDst(t)
	// Random bytes do not compress: a layer of a few hundred KiB stored.
	noise := make([]byte, 300<<10)
	rand.Read(noise)
	layers := []v1.Layer{
		layerOf(t, false, fileE("small", "small\n", 0o644)),
		layerOf(t, false, fileE("noise", string(noise), 0o644)),
		layerOf(t, true, fileE("zstd", "zstd\n", 0o644)),
	}
	ref := push(t, startRegistry(t, nil), "progress", imageOf(t, layers...), nil)

	var got []Progress
	if _, err := Import(context.Background(), registrySource(t, ref), dst, func(p Progress) { got = append(got, p) }); err != nil {
		t.Fatalf("Import: %v", err)
	}

	// Per layer, in order: Bytes never falls, calls come at least 64 KiB
	// apart, and exactly one, the last, is Done with every byte read.
	byLayer := map[int][]Progress{}
	last := 0
	for _, p := range got {
		if p.Layer < last {
			t.Fatalf("progress went back from layer %d to %d", last, p.Layer)
		}
		last = p.Layer
		byLayer[p.Layer] = append(byLayer[p.Layer], p)
	}
	for i, l := range layers {
		n := i + 1
		evs := byLayer[n]
		digest, _ := l.Digest()
		size, _ := l.Size()
		if len(evs) == 0 {
			t.Fatalf("layer %d: no progress", n)
		}
		for j, p := range evs {
			if p.Layers != len(layers) || p.Total != size || p.Digest != digest.String() {
				t.Errorf("layer %d event %d: %+v, want Layers %d Total %d Digest %s", n, j, p, len(layers), size, digest)
			}
			if done := j == len(evs)-1; p.Done != done {
				t.Errorf("layer %d event %d: Done %v, want %v", n, j, p.Done, done)
			}
			if j > 0 && !p.Done && p.Bytes-evs[j-1].Bytes < progressEvery {
				t.Errorf("layer %d: events %d bytes apart, want at least %d", n, p.Bytes-evs[j-1].Bytes, progressEvery)
			}
			if j > 0 && p.Bytes < evs[j-1].Bytes {
				t.Errorf("layer %d: Bytes fell from %d to %d", n, evs[j-1].Bytes, p.Bytes)
			}
		}
		if end := evs[len(evs)-1]; end.Bytes != size {
			t.Errorf("layer %d: Done at %d bytes, want %d", n, end.Bytes, size)
		}
	}
	if n := len(byLayer[2]); n < 4 {
		t.Errorf("the 300 KiB layer had %d progress calls, want one per 64 KiB and the end", n)
	}
}
