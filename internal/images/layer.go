package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/zstd"
)

// progressEvery is how many stored bytes may pass between two progress
// calls for one layer.
const progressEvery = 64 << 10

// maxZstdWindow bounds the memory one zstd layer may make the decoder
// allocate (zstd --long uses up to 128 MiB).
const maxZstdWindow = 128 << 20

// layerBlob is one layer as stored.
type layerBlob struct {
	// digest names the stored bytes; zero where the source names them by
	// nothing (a docker save tarball), leaving diffID as the only check.
	digest v1.Hash
	// diffID names the uncompressed tar, from the image config.
	diffID v1.Hash
	size   int64 // stored size; -1 until opened where the source says none
	// open returns the stored bytes and their size.
	open func() (io.ReadCloser, int64, error)
}

// id is how errors and progress name the layer.
func (l layerBlob) id() string {
	if l.digest.Hex != "" {
		return l.digest.String()
	}
	return l.diffID.String()
}

// applyFunc applies one tar entry; r reads its contents.
type applyFunc func(hdr *tar.Header, r io.Reader) error

// readLayer streams layer l (number n of of) through verification and
// decompression into apply.
func readLayer(ctx context.Context, l layerBlob, n, of int, limit *budget, progress func(Progress), apply applyFunc) error {
	br, report, err := openLayer(ctx, l, n, of, progress)
	if err != nil {
		return err
	}
	defer br.close()

	err = unpack(ctx, br, l.diffID, limit, apply)
	if err == nil {
		err = br.finish()
	} else if ctx.Err() == nil && !errors.Is(err, ErrDigestMismatch) {
		// A corrupt blob usually breaks the decompressor or the tar reader
		// before its end; read on to the end so the error names the cause.
		if ferr := br.finish(); errors.Is(ferr, ErrDigestMismatch) {
			err = ferr
		}
	}
	if err != nil {
		return err
	}
	report(true)
	return nil
}

// openLayer opens layer l (number n of of) for reading through a
// blobReader that checks its digest and reports progress; report(true)
// says it is done. The caller closes it.
func openLayer(ctx context.Context, l layerBlob, n, of int, progress func(Progress)) (*blobReader, func(done bool), error) {
	rc, size, err := l.open()
	if err != nil {
		return nil, nil, fmt.Errorf("open: %w", err)
	}
	br := &blobReader{ctx: ctx, r: rc, h: sha256.New(), want: l.digest, size: size, close: rc.Close}
	report := func(done bool) {
		if progress != nil {
			progress(Progress{Layer: n, Layers: of, Bytes: br.n, Total: size, Digest: l.id(), Done: done})
		}
	}
	br.report = func() { report(false) }
	return br, report, nil
}

// unpack decompresses r, hands each tar entry to apply and checks the
// uncompressed stream against diffID.
func unpack(ctx context.Context, r io.Reader, diffID v1.Hash, limit *budget, apply applyFunc) error {
	if diffID.Algorithm != "sha256" {
		return fmt.Errorf("%w: diff_id %q is not sha256", ErrNotImage, diffID)
	}
	zr, closeZ, err := decompress(r)
	if err != nil {
		return err
	}
	defer closeZ()
	h := sha256.New()
	ur := &countingReader{r: io.TeeReader(zr, h), limit: limit}
	tr := tar.NewReader(ur)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		if err := apply(hdr, tr); err != nil {
			return fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
	}
	// The diff_id covers the whole stream, past the end-of-archive blocks.
	if _, err := io.Copy(io.Discard, ur); err != nil {
		return fmt.Errorf("read tar: %w", err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID.String() {
		return fmt.Errorf("%w: uncompressed content hashes to %s, config's diff_id is %s", ErrDigestMismatch, got, diffID)
	}
	return nil
}

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// decompress sniffs r's compression rather than trusting a media type:
// docker save calls every layer gzip, and some registries mislabel.
func decompress(r io.Reader) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		return zr, func() { zr.Close() }, nil
	case bytes.Equal(magic, zstdMagic):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow))
		if err != nil {
			return nil, nil, fmt.Errorf("zstd: %w", err)
		}
		return zr, zr.Close, nil
	}
	return br, func() {}, nil
}

// blobReader hashes a layer's stored bytes as they stream by, checks them
// against the digest that names them when the stream ends, and reports
// progress.
type blobReader struct {
	ctx         context.Context
	r           io.Reader
	h           hash.Hash
	want        v1.Hash // zero: nothing to check
	size        int64   // -1: unknown
	n, reported int64
	report      func()
	err         error // sticky
	close       func() error
}

func (b *blobReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if err := b.ctx.Err(); err != nil {
		b.err = err
		return 0, err
	}
	n, err := b.r.Read(p)
	b.h.Write(p[:n])
	b.n += int64(n)
	if b.size >= 0 && b.n > b.size {
		// An endless blob must not stream on until the disk is full.
		b.err = fmt.Errorf("%w: blob is longer than its %d bytes", ErrDigestMismatch, b.size)
		return 0, b.err
	}
	if b.n-b.reported >= progressEvery {
		b.reported = b.n
		b.report()
	}
	if err != nil {
		// The registry client reports its own checksum failure as a read
		// error at the blob's end; name it in our words.
		if errors.Is(err, io.EOF) || b.n == b.size {
			if merr := b.check(); merr != nil {
				err = merr
			}
		}
		b.err = err
	}
	return n, err
}

// check compares what was read with the digest that names it.
func (b *blobReader) check() error {
	if b.want.Hex == "" {
		return nil
	}
	if got := "sha256:" + hex.EncodeToString(b.h.Sum(nil)); got != b.want.String() {
		return fmt.Errorf("%w: blob hashes to %s after %d bytes", ErrDigestMismatch, got, b.n)
	}
	return nil
}

// finish reads the blob to its end, so that it is verified whole.
func (b *blobReader) finish() error {
	_, err := io.Copy(io.Discard, b)
	return err
}

// budget counts bytes against Source.MaxBytes across all layers.
type budget struct {
	max, used int64 // max 0: no limit
	what      string
}

func (b *budget) take(n int64) error {
	b.used += n
	if b.max > 0 && b.used > b.max {
		return fmt.Errorf("%w: %s passes the %d-byte limit", ErrTooLarge, b.what, b.max)
	}
	return nil
}

// countingReader charges what passes through it to a budget.
type countingReader struct {
	r     io.Reader
	limit *budget
	err   error
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	if lerr := c.limit.take(int64(n)); lerr != nil {
		c.err = lerr
		return 0, lerr
	}
	return n, err
}

// budgetWriter charges file content written to a budget.
type budgetWriter struct {
	w     io.Writer
	limit *budget
}

func (b *budgetWriter) Write(p []byte) (int, error) {
	if err := b.limit.take(int64(len(p))); err != nil {
		return 0, err
	}
	return b.w.Write(p)
}
