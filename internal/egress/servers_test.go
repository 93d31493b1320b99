package egress

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// tcpServer is an upstream on 127.0.0.1 that remembers who connected, so a
// test can prove the proxy never reached it.
type tcpServer struct {
	ln     net.Listener
	handle func(net.Conn)

	mu      sync.Mutex
	remotes []string
	conns   map[net.Conn]bool
	wg      sync.WaitGroup
	closed  sync.Once
}

func startTCP(t *testing.T, handle func(net.Conn)) *tcpServer {
	t.Helper()
	return serveTCP(t, listen(t), handle)
}

// startTCPOn is startTCP on addr.
func startTCPOn(t *testing.T, addr string, handle func(net.Conn)) *tcpServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return serveTCP(t, ln, handle)
}

func serveTCP(t *testing.T, ln net.Listener, handle func(net.Conn)) *tcpServer {
	s := &tcpServer{ln: ln, handle: handle, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.remotes = append(s.remotes, c.RemoteAddr().String())
			s.conns[c] = true
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() {
					c.Close()
					s.mu.Lock()
					delete(s.conns, c)
					s.mu.Unlock()
				}()
				s.handle(c)
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

// startEcho serves an upstream that echoes what it reads.
func startEcho(t *testing.T) *tcpServer {
	return startTCP(t, func(c net.Conn) { io.Copy(c, c) })
}

// close stops the server and cuts its connections.
func (s *tcpServer) close() {
	s.closed.Do(func() {
		s.ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
}

func (s *tcpServer) addr() string { return s.ln.Addr().String() }

func (s *tcpServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// accepted returns how many connections reached the server before a probe
// of the test's own. Accepts are in arrival order, so once the probe is
// in, every connection the proxy made earlier is counted.
func (s *tcpServer) accepted(t *testing.T) int {
	t.Helper()
	probe, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	me := probe.LocalAddr().String()
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		for i, r := range s.remotes {
			if r == me {
				s.mu.Unlock()
				return i
			}
		}
		s.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("probe connection never accepted")
	return 0
}

// rawHTTP serves one request per connection with a fixed raw response
// head and body, and passes each request's headers to seen.
func rawHTTP(head string, body func(*http.Request) string, seen func(http.Header)) func(net.Conn) {
	return func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		seen(req.Header)
		b := body(req)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(b))+"\r\n"+head+"\r\n"+b)
	}
}
