package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// TestWriteFileStreams: the server reads the first piece of an upload
// before the caller has written the second, so the client sends the body
// as it comes instead of reading it whole first.
func TestWriteFileStreams(t *testing.T) {
	first, second := bytes.Repeat([]byte("a"), 1<<20), bytes.Repeat([]byte("b"), 1<<20)
	gotFirst := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || r.URL.Query().Get("path") != "big" || r.URL.Query().Get("mode") != "0640" {
			t.Errorf("request %s %s", r.Method, r.URL)
		}
		if r.ContentLength != -1 {
			t.Errorf("ContentLength = %d; want -1 (chunked)", r.ContentLength)
		}
		buf := make([]byte, len(first))
		if _, err := io.ReadFull(r.Body, buf); err != nil || !bytes.Equal(buf, first) {
			t.Errorf("first piece: %v", err)
		}
		close(gotFirst)
		rest, err := io.ReadAll(r.Body)
		if err != nil || !bytes.Equal(rest, second) {
			t.Errorf("second piece: %d bytes, %v", len(rest), err)
		}
		io.WriteString(w, `{"path":"/home/user/big","size":`+strconv.Itoa(len(buf)+len(rest))+`}`)
	}))
	defer srv.Close()

	pr, pw := io.Pipe()
	go func() {
		pw.Write(first)
		select {
		case <-gotFirst:
			pw.Write(second)
			pw.Close()
		case <-time.After(time.Minute):
			// Not a timing assertion: a client that buffers never lets
			// the server see the first piece, and would hang the test.
			pw.CloseWithError(io.ErrNoProgress)
		}
	}()
	n, err := New(srv.URL, "k").WriteFile(context.Background(), "sb", "big", pr, 0o640)
	if err != nil || n != int64(len(first)+len(second)) {
		t.Fatalf("WriteFile = %d, %v", n, err)
	}
}

// TestReadFileStreams: the caller's writer gets the first piece before the
// server sends the second.
func TestReadFileStreams(t *testing.T) {
	gotFirst := make(chan []byte)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-gotFirst:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "second")
	}))
	defer srv.Close()
	w := &notifyWriter{first: gotFirst}
	n, err := New(srv.URL, "k").ReadFile(context.Background(), "sb", "f", w)
	if err != nil || n != 11 || w.buf.String() != "firstsecond" {
		t.Errorf("ReadFile = %d %q, %v", n, w.buf.String(), err)
	}
}

type notifyWriter struct {
	buf   bytes.Buffer
	first chan []byte
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	if w.buf.Len() == 0 {
		defer close(w.first)
	}
	return w.buf.Write(p)
}

// TestLargeRoundTrip moves 16 MiB each way through the client without
// holding it: the reader is generated, the writer only hashes.
func TestLargeRoundTrip(t *testing.T) {
	const size = 16 << 20
	var upHash []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			h := sha256.New()
			n, _ := io.Copy(h, r.Body)
			upHash = h.Sum(nil)
			io.WriteString(w, `{"size":`+strconv.FormatInt(n, 10)+`}`)
			return
		}
		io.Copy(w, io.LimitReader(&pattern{}, size))
	}))
	defer srv.Close()
	c := New(srv.URL, "k")
	n, err := c.WriteFile(context.Background(), "sb", "f", io.LimitReader(&pattern{}, size), 0)
	want := sha256.New()
	io.Copy(want, io.LimitReader(&pattern{}, size))
	if err != nil || n != size || !bytes.Equal(upHash, want.Sum(nil)) {
		t.Errorf("upload = %d, %v; hash match %v", n, err, bytes.Equal(upHash, want.Sum(nil)))
	}
	h := sha256.New()
	n, err = c.ReadFile(context.Background(), "sb", "f", h)
	if err != nil || n != size || !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
		t.Errorf("download = %d, %v", n, err)
	}
}

// pattern yields 0, 1, ..., 250, 0, ... (251 is prime, so no power-of-two
// chunking lines up with it).
type pattern struct{ n int }

func (r *pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.n % 251)
		r.n++
	}
	return len(p), nil
}
