package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// newNS returns a fresh namespace with lo up, closed when the test ends.
func newNS(t *testing.T) *os.File {
	t.Helper()
	linuxtest.Require(t)
	ns, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	if err := SetLoopbackUp(ns); err != nil {
		t.Fatal(err)
	}
	return ns
}

func inode(t testing.TB, path string) uint64 {
	t.Helper()
	ino, err := statInode(path)
	if err != nil {
		t.Fatal(err)
	}
	return ino
}

// statInode is inode for goroutines other than the test's, which must not
// call t.Fatal.
func statInode(path string) (uint64, error) {
	var st unix.Stat_t
	err := unix.Stat(path, &st)
	return st.Ino, err
}

func fileInode(t testing.TB, f *os.File) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func TestNewIsEmpty(t *testing.T) {
	linuxtest.Require(t)
	ns, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if fileInode(t, ns) == inode(t, "/proc/self/ns/net") {
		t.Fatal("New returned the host namespace")
	}
	check := func(wantUp bool) {
		t.Helper()
		var ifs []net.Interface
		if err := Do(ns, func() (err error) { ifs, err = net.Interfaces(); return err }); err != nil {
			t.Fatal(err)
		}
		if len(ifs) != 1 || ifs[0].Name != "lo" {
			t.Fatalf("interfaces in new namespace = %v, want only lo", ifs)
		}
		if up := ifs[0].Flags&net.FlagUp != 0; up != wantUp {
			t.Fatalf("lo up = %v, want %v", up, wantUp)
		}
	}
	check(false)
	if err := SetLoopbackUp(ns); err != nil {
		t.Fatal(err)
	}
	check(true)
}

// TestListenOnlyReachableInside proves a listener made by Listen belongs to
// the namespace: a dial from the host to the same address does not reach it,
// a dial from inside does.
func TestListenOnlyReachableInside(t *testing.T) {
	ns := newNS(t)
	l, err := Listen(ns, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()

	// On the host this is the host's loopback; most likely nothing listens
	// there, but if something does it is not our listener, which the
	// accept order below proves.
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
	}

	inside, err := Dial(context.Background(), ns, "tcp", addr)
	if err != nil {
		t.Fatalf("dial %s inside the namespace: %v", addr, err)
	}
	defer inside.Close()
	if _, err := inside.Write([]byte("inside\n")); err != nil {
		t.Fatal(err)
	}
	// The first connection accepted must be the one from inside: had the
	// host's dial reached this listener, it would have been queued first.
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, want := c.RemoteAddr().String(), inside.LocalAddr().String(); got != want {
		t.Fatalf("first accepted connection from %s, want the inside dialer %s", got, want)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "inside\n" {
		t.Fatalf("read %q, %v; want \"inside\\n\"", line, err)
	}
}

func TestListenPacket(t *testing.T) {
	ns := newNS(t)
	pc, err := ListenPacket(ns, "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	err = Do(ns, func() error {
		c, err := net.Dial("udp", pc.LocalAddr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("ping"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, _, err := pc.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("read %q, %v; want ping", buf[:n], err)
	}
}

// TestDoRestores runs Do from many goroutines at once and checks that no
// thread of the process is left in the other namespace afterwards.
func TestDoRestores(t *testing.T) {
	ns := newNS(t)
	host, target := inode(t, "/proc/self/ns/net"), fileInode(t, ns)

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 32 {
		wg.Go(func() {
			for range 50 {
				err := Do(ns, func() error {
					if ino, err := statInode(threadNS); err != nil || ino != target {
						return fmt.Errorf("fn ran outside the target namespace (%d, %v)", ino, err)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				runtime.Gosched()
				// Whatever thread runs this goroutine now must be back home.
				if ino, err := statInode(threadNS); err != nil || ino != host {
					errs <- fmt.Errorf("goroutine resumed on a thread in namespace %d, want %d (%v)", ino, host, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	tasks, err := filepath.Glob("/proc/self/task/*/ns/net")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("list threads: %v", err)
	}
	for _, p := range tasks {
		ino, err := statInode(p)
		if err != nil {
			continue // the thread exited meanwhile
		}
		if ino != host {
			t.Errorf("thread %s is in namespace %d, want the host's %d", p, ino, host)
		}
	}
}

func TestDoRejectsNonNamespace(t *testing.T) {
	linuxtest.Require(t)
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ran := false
	if err := Do(f, func() error { ran = true; return nil }); err == nil {
		t.Fatal("Do accepted /dev/null as a namespace")
	}
	if ran {
		t.Fatal("fn ran although joining the namespace failed")
	}
}

func TestDoReturnsFnError(t *testing.T) {
	ns := newNS(t)
	want := errors.New("boom")
	if err := Do(ns, func() error { return want }); !errors.Is(err, want) {
		t.Fatalf("Do returned %v, want %v", err, want)
	}
}
