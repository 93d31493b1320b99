package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// TestReadRefusesDevicesFIFOsSocketsAndKernelFiles: a read of anything but
// a regular file's bytes is a runtime.NotRegularError (an ErrInvalid) saying
// what is there, decided on the opened file, so a symlink to /proc or to a
// device does not dodge it; nothing is sent, and a FIFO does not hang the
// read. Regular files elsewhere, /dev/shm's among them, read as before.
func TestReadRefusesDevicesFIFOsSocketsAndKernelFiles(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, f func(p string) error) string {
		p := filepath.Join(dir, name)
		if err := f(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := mk("fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) })
	sock := mk("sock", func(p string) error {
		ln, err := net.Listen("unix", p)
		if err == nil {
			t.Cleanup(func() { ln.Close() })
		}
		return err
	})
	procLink := mk("proc-link", func(p string) error { return os.Symlink("/proc/self/status", p) })
	devLink := mk("dev-link", func(p string) error { return os.Symlink("/dev/zero", p) })
	file := mk("file", func(p string) error { return os.WriteFile(p, []byte("content"), 0o644) })
	shm, err := os.CreateTemp("/dev/shm", "airlock-agent-test")
	if err != nil {
		t.Fatal(err)
	}
	shm.WriteString("made by the user")
	shm.Close()
	t.Cleanup(func() { os.Remove(shm.Name()) })

	// Root "/": the host's /proc, /sys and /dev stand in for the sandbox's.
	c := startServer(t, Config{UID: -1, GID: -1, Root: "/", Workdir: "/"})
	for _, tc := range []struct {
		path, what string // what: "" for a file that reads
		want       string
	}{
		{"/proc/self/status", "a file of the kernel's proc filesystem", ""},
		{"/proc/self/cmdline", "a file of the kernel's proc filesystem", ""},
		{"/sys/kernel/mm/transparent_hugepage/enabled", "a file of the kernel's sysfs filesystem", ""},
		{procLink, "a file of the kernel's proc filesystem", ""},
		{"/dev/null", "a character device", ""},
		{"/dev/zero", "a character device", ""},
		{devLink, "a character device", ""},
		{fifo, "a FIFO (named pipe)", ""},
		{sock, "a unix socket", ""},
		{file, "", "content"},
		{shm.Name(), "", "made by the user"},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var got bytes.Buffer
			n, err := c.ReadFile(ctx, tc.path, &got)
			if tc.what == "" {
				if err != nil || got.String() != tc.want {
					t.Fatalf("ReadFile = %q, %v; want %q", got.String(), err, tc.want)
				}
				return
			}
			var nre *runtime.NotRegularError
			if !errors.As(err, &nre) || nre.What != tc.what || nre.Path != tc.path || !errors.Is(err, runtime.ErrInvalid) {
				t.Fatalf("ReadFile: %v (%T); want a NotRegularError of %s", err, err, tc.what)
			}
			if n != 0 || got.Len() != 0 {
				t.Errorf("%d bytes sent before the refusal", got.Len())
			}
		})
	}
}

// TestWriteUnderProcIsInvalid: a write where the kernel's files are says so,
// rather than "no such file".
func TestWriteUnderProcIsInvalid(t *testing.T) {
	c := startServer(t, Config{UID: -1, GID: -1, Root: "/", Workdir: "/"})
	_, err := c.WriteFile(context.Background(), "/proc/self/airlock-test", strings.NewReader("x"), 0)
	if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "kernel's proc filesystem") {
		t.Fatalf("write under /proc: %v; want ErrInvalid naming the proc filesystem", err)
	}
}

// changeOnFirstWrite runs change when the first bytes of the read arrive,
// while the agent is still reading (the file is far larger than what the
// socket buffers hold).
type changeOnFirstWrite struct {
	change func()
	done   bool
	n      int64
}

func (w *changeOnFirstWrite) Write(p []byte) (int, error) {
	if !w.done {
		w.done = true
		w.change()
	}
	w.n += int64(len(p))
	return len(p), nil
}

// TestReadOfAChangingFileFails: a file that grows, shrinks or is written
// while it is read fails the read with runtime.ErrChanged, and the reader
// never gets as many bytes as the file had: a client cannot mistake what it
// got for the file. An unchanged file of the same size reads whole.
func TestReadOfAChangingFileFails(t *testing.T) {
	const size = 16 << 20 // far beyond the socket buffers
	data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	c, root, _ := fileServer(t)
	p := filepath.Join(root, "home/user/big")
	for _, tc := range []struct {
		name   string
		change func(t *testing.T)
	}{
		{"grows", func(t *testing.T) {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("appended")
			f.Close()
		}},
		{"shrinks", func(t *testing.T) {
			if err := os.Truncate(p, 1000); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated and refilled to its size", func(t *testing.T) {
			if err := os.WriteFile(p, bytes.ToUpper(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"written in place", func(t *testing.T) {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("XXXX"), size-4)
			f.Close()
			// Past any timestamp granularity of the filesystem.
			later := time.Now().Add(time.Hour)
			os.Chtimes(p, later, later)
		}},
		{"unchanged", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			w := &changeOnFirstWrite{change: func() {}}
			if tc.change != nil {
				w.change = func() { tc.change(t) }
			}
			n, err := c.ReadFile(context.Background(), "big", w)
			if tc.change == nil {
				if err != nil || n != size || w.n != size {
					t.Fatalf("unchanged file: %d bytes, %v; want %d", w.n, err, size)
				}
				return
			}
			if !errors.Is(err, runtime.ErrChanged) {
				t.Fatalf("ReadFile: %v; want ErrChanged", err)
			}
			if w.n >= size {
				t.Errorf("the reader got %d bytes, all of the file's %d", w.n, size)
			}
		})
	}
}

// TestReadSendsEveryChunkOnce: the read holds each chunk back until the next
// is read (and the last until the file is checked unchanged); whatever the
// size, every byte still arrives exactly once and in order.
func TestReadSendsEveryChunkOnce(t *testing.T) {
	c, root, _ := fileServer(t)
	p := filepath.Join(root, "home/user/small")
	want := []byte("small file")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := c.ReadFile(context.Background(), "small", &got); err != nil || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("ReadFile = %q, %v", got.Bytes(), err)
	}
	// Two chunks and a bit: every chunk arrives, each exactly once.
	big := bytes.Repeat([]byte{'x'}, 2*MaxPayload+1)
	if err := os.WriteFile(p, big, 0o644); err != nil {
		t.Fatal(err)
	}
	got.Reset()
	if _, err := c.ReadFile(context.Background(), "small", &got); err != nil || sha256.Sum256(got.Bytes()) != sha256.Sum256(big) {
		t.Fatalf("ReadFile of %d bytes = %d bytes, %v", len(big), got.Len(), err)
	}
}

// TestWireErrorCallerErrorsAreInvalid: the errnos of a bad request reach
// the host as invalid (a 400), not internal (which the API answers 503).
func TestWireErrorCallerErrorsAreInvalid(t *testing.T) {
	for errno, want := range map[syscall.Errno]string{
		syscall.ENAMETOOLONG: CodeInvalid,
		syscall.ELOOP:        CodeInvalid,
		syscall.ENXIO:        CodeInvalid,
		syscall.ENODEV:       CodeInvalid,
		syscall.EOVERFLOW:    CodeInvalid,
		syscall.EFBIG:        CodeNoSpace,
		syscall.EIO:          CodeInternal,
	} {
		if got := wireError(fmt.Errorf("open /x: %w", errno)).Code; got != want {
			t.Errorf("%v: code %q, want %q", errno, got, want)
		}
	}
}
