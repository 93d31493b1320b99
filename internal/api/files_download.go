package api

import (
	"errors"
	"io/fs"
	"net/http"
	"strconv"

	"github.com/airlockhq/airlock/internal/runtime"
)

// finishDownload ends a download of n bytes that ended with err. Before
// the first byte it can still be an error answer; after it, a download
// that failed, or whose length is not the one announced, is cut off
// (http.ErrAbortHandler: the HTTP/1.1 connection is closed before the
// declared length or the last chunk, an HTTP/2 stream is reset), so the
// client sees a broken download, never a short or long file.
func (s *server) finishDownload(w http.ResponseWriter, r *http.Request, dl *download, n int64, err error) {
	p, id := r.URL.Query().Get("path"), r.PathValue("id")
	const again = "read it again once it is no longer written"
	switch {
	case dl.over:
		err = errf(http.StatusConflict, codeConflict, "%s grew past the %d bytes it had when listed, while it was read; %s", p, dl.size, again)
	case err == nil && dl.size >= 0 && n != dl.size:
		err = errf(http.StatusConflict, codeConflict, "%s changed from %d to %d bytes while it was read; %s", p, dl.size, n, again)
	}
	if err == nil {
		if ferr := dl.finish(); ferr != nil {
			s.log.Debug("client gone", "path", r.URL.Path, "err", ferr)
		}
		return
	}
	if !dl.started {
		s.fail(w, r, err)
		return
	}
	if r.Context().Err() != nil {
		s.log.Debug("client gone", "path", r.URL.Path, "err", err)
		return
	}
	s.log.Warn("read file cut off", "sandbox", id, "path", p, "sent", dl.sent, "size", dl.size, "err", err)
	panic(http.ErrAbortHandler)
}

// notAFile says what fi is when it is neither a regular file nor a
// symlink (which the read follows and the agent checks), "" otherwise.
func notAFile(fi runtime.FileInfo) string {
	switch m := fi.Mode; {
	case fi.IsDir || m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0, m.IsRegular():
		return ""
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a unix socket"
	}
	return "a special file"
}

// download sends a file's bytes with their headers, which go out with the
// first byte so that an error found before it can still be an error
// answer. With a known size, that is the Content-Length: a write past it
// is refused whole (over), and the bytes that complete it are held back
// until the read is known good (finish), so a client never holds the
// announced length of bytes that are not the file. A file of one chunk is
// thus all held back, and any failure of its read is an error answer.
type download struct {
	w       http.ResponseWriter
	size    int64 // -1: unknown (a symlink's target), sent chunked
	got     int64 // bytes the read gave, sent or held back
	sent    int64 // bytes written to the client
	tail    []byte
	started bool
	over    bool
}

func (d *download) Write(p []byte) (int, error) {
	if d.size < 0 || len(p) == 0 {
		return d.send(p)
	}
	if d.got+int64(len(p)) > d.size {
		d.over = true
		return 0, errGrew
	}
	d.got += int64(len(p))
	if d.got == d.size {
		d.tail = append(d.tail[:0], p...)
		return len(p), nil
	}
	return d.send(p)
}

func (d *download) send(p []byte) (int, error) {
	if !d.started {
		d.start()
	}
	n, err := d.w.Write(p)
	d.sent += int64(n)
	return n, err
}

func (d *download) start() {
	d.started = true
	h := d.w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	if d.size >= 0 {
		h.Set("Content-Length", strconv.FormatInt(d.size, 10))
	}
	d.w.WriteHeader(http.StatusOK)
}

// finish sends what was held back once the read has ended well (the
// headers alone for an empty file).
func (d *download) finish() error {
	if !d.started && d.tail == nil {
		d.start()
		return nil
	}
	_, err := d.send(d.tail)
	d.tail = nil
	return err
}

var errGrew = errors.New("the file grew past its listed size")
