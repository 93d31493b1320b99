package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// chunks writes n bytes to w in chunks of the agent's frame size, then
// returns err.
func chunks(n int, err error) func(w io.Writer) (int64, error) {
	return func(w io.Writer) (int64, error) {
		var sent int64
		for left := n; left > 0; left -= 64 << 10 {
			m, werr := w.Write(bytes.Repeat([]byte{'x'}, min(left, 64<<10)))
			sent += int64(m)
			if werr != nil {
				return sent, fmt.Errorf("agent read: %w", werr)
			}
		}
		return sent, err
	}
}

// TestDownloadOfAChangingFileFailsForTheClient: a file that changes size
// while it is read, or whose read fails, is a 409 (or the runtime's error)
// when nothing was sent yet, and otherwise a download cut off before its
// end, which a plain HTTP client and the Go client both report as an
// error: never a short or long body taken for the file.
func TestDownloadOfAChangingFileFailsForTheClient(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	changed := fmt.Errorf("%w: /home/user/f: the file grew past its 10 bytes while it was read", sandbox.ErrConflict)
	const big = 200 << 10
	for _, tc := range []struct {
		name    string
		size    int // what Stat reports
		symlink bool
		read    func(w io.Writer) (int64, error)
		status  int    // 0: the download starts and must fail
		msg     string // with a status: in the error's message
	}{
		{"unchanged", big, false, chunks(big, nil), 200, ""},
		{"empty", 0, false, chunks(0, nil), 200, ""},
		{"grew before the first byte", 10, false, chunks(20, nil), 409, "grew past the 10 bytes it had when listed, while it was read"},
		{"shrank to nothing before the first byte", 10, false, chunks(0, nil), 409, "changed from 10 to 0 bytes while it was read"},
		{"changed as the runtime saw it", 10, false, chunks(0, changed), 409, "the file grew past its 10 bytes"},
		{"grew mid-download", big, false, chunks(big+100, nil), 0, ""},
		// The listed size falls on a chunk's end: the bytes up to it must
		// not all reach the client before the read is known good.
		{"grew by whole chunks after the listing", 128 << 10, false, chunks(192<<10, nil), 0, ""},
		{"grew by a chunk after a one-chunk listing", 64 << 10, false, chunks(128<<10, nil), 409, "grew past the 65536 bytes"},
		{"one chunk, failed at its end", 10, false, func(w io.Writer) (int64, error) {
			w.Write(make([]byte, 10))
			return 10, changed
		}, 409, "the file grew past its 10 bytes"},
		{"shrank mid-download", big, false, chunks(big-100, nil), 0, ""},
		{"failed mid-download", big, false, chunks(128<<10, changed), 0, ""},
		{"symlink, complete", 4, true, chunks(big, nil), 200, ""},
		{"symlink, failed mid-download", 4, true, chunks(128<<10, changed), 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mode := fs.FileMode(0o644)
			if tc.symlink {
				mode = fs.ModeSymlink | 0o777
			}
			e.m.mu.Lock()
			e.m.files[id]["/home/user/f"] = fakeFile{data: make([]byte, tc.size), mode: mode}
			e.m.read = tc.read
			e.m.mu.Unlock()

			req, _ := http.NewRequest("GET", e.srv.URL+"/v1/sandboxes/"+id+"/files?path=f", nil)
			req.Header.Set("Authorization", "Bearer "+e.alice)
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			_, gerr := client.New(e.srv.URL, e.alice).ReadFile(context.Background(), id, "f", io.Discard)
			switch {
			case tc.status == 0:
				if resp.StatusCode != 200 || !errors.Is(rerr, io.ErrUnexpectedEOF) {
					t.Errorf("HTTP: %d, %d bytes, %v; want a 200 cut off (unexpected EOF)", resp.StatusCode, len(body), rerr)
				}
				if gerr == nil {
					t.Error("the Go client took the cut-off download for the file")
				}
			case tc.status == 200:
				if resp.StatusCode != 200 || rerr != nil || gerr != nil {
					t.Errorf("HTTP: %d, %d bytes, %v; Go client: %v; want the whole file", resp.StatusCode, len(body), rerr, gerr)
				}
			default:
				a := answer{status: resp.StatusCode, body: body}
				if code, msg := a.errCode(); a.status != tc.status || code != codeConflict || !strings.Contains(msg, tc.msg) {
					t.Errorf("%d %s %.200q; want %d conflict with %q", a.status, code, msg, tc.status, tc.msg)
				}
				if !errors.Is(gerr, client.ErrConflict) {
					t.Errorf("Go client: %v; want ErrConflict", gerr)
				}
			}
		})
	}
}

// TestReadOfASpecialFileSaysWhatItIs: a device, FIFO or socket is refused
// before any read, naming what it is.
func TestReadOfASpecialFileSaysWhatItIs(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	for mode, what := range map[fs.FileMode]string{
		fs.ModeDevice | fs.ModeCharDevice: "a character device",
		fs.ModeDevice:                     "a block device",
		fs.ModeNamedPipe:                  "a FIFO (named pipe)",
		fs.ModeSocket:                     "a unix socket",
		fs.ModeDir:                        "a directory",
	} {
		e.m.mu.Lock()
		e.m.files[id]["/home/user/special"] = fakeFile{mode: mode | 0o644, dir: mode == fs.ModeDir}
		e.m.read = func(io.Writer) (int64, error) { t.Error("a special file was read"); return 0, nil }
		e.m.mu.Unlock()
		a := e.do(call{method: "GET", path: "/v1/sandboxes/" + id + "/files?path=special", cred: e.alice})
		if code, msg := a.errCode(); a.status != 400 || code != codeInvalid || !strings.Contains(msg, `"special" is `+what+", not a regular file") {
			t.Errorf("%s: %d %s %q", what, a.status, code, msg)
		}
	}
}
