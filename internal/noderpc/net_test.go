package noderpc_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// A connection into the sandbox carries bytes both ways, passes a
// half-close on, keeps net.Conn's deadlines (a read that timed out can be
// tried again), and outlives the context it was dialled with.
func TestDial(t *testing.T) {
	e := newEnv(t)
	sb := e.create(t, e.c, runtime.Spec{})
	// Reads to EOF, then answers with what it read, upper-cased.
	var out lockedBuf
	p, err := sb.Start(context.Background(), runtime.ExecRequest{Stdout: &out, Shell: `python3 -c '
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 7000))
s.listen(1)
print("ready", flush=True)
c, _ = s.accept()
data = b""
while True:
    b = c.recv(65536)
    if not b:
        break
    data += b
c.sendall(data.upper())
c.close()
'`})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server in the sandbox", func() bool { return strings.Contains(out.String(), "ready") })
	ctx, cancel := context.WithCancel(context.Background())
	c, err := sb.(runtime.Dialer).Dial(ctx, "tcp", "127.0.0.1:7000")
	cancel() // it bounded the dial only
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.RemoteAddr().String() != "127.0.0.1:7000" || !strings.HasPrefix(c.LocalAddr().String(), "127.0.0.1:") || c.RemoteAddr().Network() != "tcp" {
		t.Errorf("addresses %s -> %s", c.LocalAddr(), c.RemoteAddr())
	}
	msg := strings.Repeat("abcdefgh", 128<<10) // 1 MiB
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read past its deadline: %v", err)
	}
	c.SetReadDeadline(time.Time{})
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != strings.ToUpper(msg) {
		t.Errorf("read back %d bytes, want %d: %v", len(got), len(msg), err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("a read of a closed connection: %v", err)
	}
	if st, err := p.Wait(); err != nil || st.Code != 0 {
		t.Errorf("the server in the sandbox: %+v, %v", st, err)
	}
}

// A listener inside the sandbox accepts, one by one, the connections the
// sandbox makes to it; it outlives the context it was made with; Close
// ends a pending Accept and the listener on the node.
func TestListen(t *testing.T) {
	e := newEnv(t)
	sb := e.create(t, e.c, runtime.Spec{})
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := sb.(runtime.Listener).Listen(ctx, "tcp", "127.0.0.1:0")
	cancel() // it bounded the listen only
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("listening on %s: %v", ln.Addr(), err)
	}
	served := make(chan error, 1)
	go func() {
		for range 3 {
			c, err := ln.Accept()
			if err != nil {
				served <- err
				return
			}
			line, _ := bufio.NewReader(c).ReadString('!')
			io.WriteString(c, "pong:"+line)
			c.Close()
		}
		served <- nil
	}()
	for _, msg := range []string{"one!", "two!", "three!"} {
		if out := mustSh(t, sb, pyEcho("127.0.0.1", atoi(port), msg)); out != "pong:"+msg {
			t.Errorf("answer to %q: %q", msg, out)
		}
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	accepted := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		accepted <- err
	}()
	time.Sleep(100 * time.Millisecond) // let the Accept be pending
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; !errors.Is(err, net.ErrClosed) {
		t.Errorf("a pending Accept when the listener closed: %v", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
	// Close returned once the node closed its listener.
	r := run(t, sb, runtime.ExecRequest{Shell: pyEcho("127.0.0.1", atoi(port), "late")})
	if r.st.Code == 0 || !strings.Contains(r.stderr, "ConnectionRefused") {
		t.Errorf("a connection after Close: %+v %q", r.st, r.stderr)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
