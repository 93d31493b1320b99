package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// threadNS names the calling thread's own namespace. /proc/self/ns/net would
// name the main thread's, which is not the one a locked goroutine runs on.
const threadNS = "/proc/thread-self/ns/net"

// Do runs fn on a locked OS thread that has joined the network namespace ns
// (an open /proc/<pid>/ns/net or nsfs file), then switches the thread back
// to the caller's original network namespace. If switching back fails, the
// thread is left locked so the runtime discards it when the goroutine ends
// (never reused in the wrong namespace).
//
// fn must do its namespaced work on the calling goroutine: goroutines it
// starts run on other threads, in the caller's namespace. Sockets it creates
// stay in ns after Do returns, as do child processes it starts.
func Do(ns *os.File, fn func() error) (err error) {
	runtime.LockOSThread()
	orig, err := os.Open(threadNS)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open current network namespace: %w", err)
	}
	defer orig.Close()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		// setns fails before changing anything, so the thread is still ours.
		runtime.UnlockOSThread()
		return fmt.Errorf("join network namespace %s: %w", ns.Name(), err)
	}
	runtime.KeepAlive(ns)
	// Deferred so a panicking fn cannot leak the thread in ns either.
	defer func() {
		if rerr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); rerr != nil {
			// Stay locked: when this goroutine exits the runtime kills the
			// thread instead of scheduling other goroutines on it.
			err = errors.Join(err, fmt.Errorf("return to original network namespace: %w", rerr))
			return
		}
		runtime.UnlockOSThread()
	}()
	return fn()
}

// Listen listens on address inside ns: sockets keep the namespace they were
// created in, so the returned listener accepts connections made inside ns
// while being served by this (host) process. address should be a literal
// IP: name resolution would run partly on other goroutines, outside ns.
func Listen(ns *os.File, network, address string) (net.Listener, error) {
	var l net.Listener
	err := Do(ns, func() (err error) {
		l, err = net.Listen(network, address)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen %s %s in %s: %w", network, address, ns.Name(), err)
	}
	return l, nil
}

// ListenPacket is Listen for packet sockets (UDP).
func ListenPacket(ns *os.File, network, address string) (net.PacketConn, error) {
	var c net.PacketConn
	err := Do(ns, func() (err error) {
		c, err = net.ListenPacket(network, address)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen %s %s in %s: %w", network, address, ns.Name(), err)
	}
	return c, nil
}

// Dial connects to address inside ns: the socket is made in ns, so it
// reaches what listens on the namespace's own loopback. address must be a
// literal IP and port: name resolution would run on other goroutines,
// outside ns.
func Dial(ctx context.Context, ns *os.File, network, address string) (net.Conn, error) {
	var c net.Conn
	err := Do(ns, func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, address)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dial %s %s in %s: %w", network, address, ns.Name(), err)
	}
	return c, nil
}

// New creates a new, empty network namespace (only lo, down) and returns an
// open file for it. The caller closes it; the namespace lives while any
// file, process, socket or mount refers to it.
func New() (ns *os.File, err error) {
	runtime.LockOSThread()
	orig, err := os.Open(threadNS)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("open current network namespace: %w", err)
	}
	defer orig.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("unshare network namespace: %w", err)
	}
	defer func() {
		if rerr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); rerr != nil {
			// As in Do: the thread stays locked and dies with the goroutine.
			if ns != nil {
				ns.Close()
			}
			ns, err = nil, fmt.Errorf("return to original network namespace: %w", rerr)
			return
		}
		runtime.UnlockOSThread()
	}()
	ns, err = os.Open(threadNS)
	if err != nil {
		return nil, fmt.Errorf("open new network namespace: %w", err)
	}
	return ns, nil
}

// SetLoopbackUp brings lo up inside ns. A new namespace starts with lo down,
// and until it is up nothing there can use 127.0.0.1 or any address added
// to lo.
func SetLoopbackUp(ns *os.File) error {
	err := Do(ns, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket: %w", err)
		}
		defer unix.Close(fd)
		ifr, err := unix.NewIfreq("lo")
		if err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
			return fmt.Errorf("get lo flags: %w", err)
		}
		ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
			return fmt.Errorf("set lo up: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bring lo up in %s: %w", ns.Name(), err)
	}
	return nil
}
