package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime/pprof"
	"sort"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
)

// benchEgress measures the egress proxy on loopback: plain HTTP requests,
// HTTPS inside one CONNECT tunnel, opening tunnels, and bulk download
// through a tunnel, each beside the same traffic sent directly, the two
// paths alternating so that both see the same machine.
func benchEgress(args []string) error {
	fs := flag.NewFlagSet("bench egress", flag.ContinueOnError)
	n := fs.Int("n", 2000, "requests per row")
	nTunnel := fs.Int("n-tunnel", 200, "connections opened per row (CONNECT + TLS vs direct TLS)")
	mb := fs.Int("mb", 100, "MiB per download in the throughput rows")
	runs := fs.Int("runs", 5, "downloads per path")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), benchUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 || *nTunnel < 1 || *mb < 1 || *runs < 1 {
		return badInput("bench egress", "-n, -n-tunnel, -mb and -runs must be at least 1")
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	b, err := newEgressBench(int64(*mb)<<20, max(*n, *nTunnel, *runs)+2)
	if err != nil {
		return err
	}
	defer b.close()
	fmt.Println("egress: direct vs through the egress proxy (allow-list of IP rules), on loopback, one sequential client, the two paths alternating")
	if err := b.plainHTTP(*n); err != nil {
		return err
	}
	if err := b.tunnelRequests(*n); err != nil {
		return err
	}
	if err := b.tunnelOpen(*nTunnel); err != nil {
		return err
	}
	return b.throughput(*runs)
}

// egressBench is the proxy attached to loopback listeners and the servers
// it may reach.
type egressBench struct {
	web, tlsWeb *httptest.Server // a small answer, over HTTP and HTTPS
	src         *zeroSource
	sb          *egress.Sandbox
	proxyURL    *url.URL
	tlsConf     *tls.Config // trusts tlsWeb
	seq         int64       // the last proxy event checked
}

var benchBody = []byte("hello from the egress bench\n")

func newEgressBench(size int64, logSize int) (b *egressBench, err error) {
	b = &egressBench{}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(benchBody) })
	quiet := log.New(io.Discard, "", 0)
	b.web = httptest.NewUnstartedServer(h)
	b.web.Config.ErrorLog = quiet
	b.web.Start()
	b.tlsWeb = httptest.NewUnstartedServer(h)
	b.tlsWeb.Config.ErrorLog = quiet
	b.tlsWeb.StartTLS()
	pool := x509.NewCertPool()
	pool.AddCert(b.tlsWeb.Certificate())
	// An IP server name sends no SNI, so the proxy's fronting check passes.
	b.tlsConf = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if b.src, err = newZeroSource(size); err != nil {
		return b, err
	}
	// Loopback is a forbidden range: the bench is its own operator, and
	// opens it with explicit IP rules (OwnRules).
	rules, err := egress.Compile(egress.Policy{Mode: egress.ModeAllowlist, Allow: []string{
		b.web.Listener.Addr().String(), b.tlsWeb.Listener.Addr().String(), b.src.ln.Addr().String()}})
	if err != nil {
		return b, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return b, err
	}
	b.sb = egress.New(egress.Config{LogSize: logSize, OwnRules: true}).Attach("bench", "bench", rules, ln, nil)
	b.proxyURL = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	return b, nil
}

func (b *egressBench) close() {
	if b.sb != nil {
		b.sb.Close()
	}
	for _, s := range []*httptest.Server{b.web, b.tlsWeb} {
		if s != nil {
			s.Close()
		}
	}
	if b.src != nil {
		b.src.close()
	}
}

// plainHTTP times GETs direct and through the proxy as an HTTP forward proxy.
func (b *egressBench) plainHTTP(n int) error {
	direct := &http.Transport{} // not DefaultTransport: it obeys $HTTP_PROXY
	proxied := &http.Transport{Proxy: http.ProxyURL(b.proxyURL)}
	defer direct.CloseIdleConnections()
	defer proxied.CloseIdleConnections()
	d, p, err := alternate(n, func() error { return get(direct, b.web.URL) }, func() error { return get(proxied, b.web.URL) })
	if err != nil {
		return fmt.Errorf("plain HTTP: %w", err)
	}
	if err := b.expect("http", n+1, int64(n+1)*int64(len(benchBody))); err != nil {
		return err
	}
	fmt.Printf("\nHTTP GET of %d bytes, n=%d per row. The client keeps its connection alive on both paths; the proxy\n", len(benchBody), n)
	fmt.Println("dials upstream afresh for each request (no pooling, by design: every dial is checked), so that is in the proxy row")
	latencyRows(row{name: "direct", d: d}, row{name: "through the proxy (HTTP forward proxy)", d: p})
	return nil
}

// tunnelRequests times HTTPS GETs over one kept-alive connection: direct
// TLS, and TLS inside one CONNECT tunnel.
func (b *egressBench) tunnelRequests(n int) error {
	direct := &http.Transport{TLSClientConfig: b.tlsConf.Clone()}
	proxied := &http.Transport{Proxy: http.ProxyURL(b.proxyURL), TLSClientConfig: b.tlsConf.Clone()}
	defer direct.CloseIdleConnections()
	d, p, err := alternate(n, func() error { return get(direct, b.tlsWeb.URL) }, func() error { return get(proxied, b.tlsWeb.URL) })
	proxied.CloseIdleConnections() // ends the tunnel, which logs its event
	if err != nil {
		return fmt.Errorf("HTTPS: %w", err)
	}
	if err := b.expect("connect", 1, int64(n+1)*int64(len(benchBody))); err != nil {
		return fmt.Errorf("HTTPS over one tunnel: %w", err)
	}
	fmt.Printf("\nHTTPS GET of %d bytes over one kept-alive connection, n=%d per row\n", len(benchBody), n)
	latencyRows(row{name: "direct TLS", d: d}, row{name: "TLS inside one CONNECT tunnel", d: p})
	return nil
}

// tunnelOpen times opening a connection ready for a request: TCP + TLS
// handshake direct, and CONNECT + TLS handshake through the proxy.
func (b *egressBench) tunnelOpen(n int) error {
	target := b.tlsWeb.Listener.Addr().String()
	handshake := func(c net.Conn) error {
		defer c.Close()
		return tls.Client(c, b.tlsConf.Clone()).Handshake()
	}
	d, p, err := alternate(n, func() error {
		c, err := net.Dial("tcp", target)
		if err != nil {
			return err
		}
		return handshake(c)
	}, func() error {
		c, err := b.dialTunnel(target)
		if err != nil {
			return err
		}
		return handshake(c)
	})
	if err != nil {
		return fmt.Errorf("opening connections: %w", err)
	}
	if err := b.expect("connect", n+1, 0); err != nil {
		return err
	}
	fmt.Printf("\nopening a connection, n=%d per row (full handshakes, no session resumption)\n", n)
	fmt.Printf("%-40s %9s %9s %9s %9s\n", "path", "p50", "p95", "p99", "max")
	row{name: "direct: TCP + TLS handshake", d: d}.print()
	row{name: "proxy: CONNECT + TLS handshake", d: p}.print()
	fmt.Printf("added by the proxy at p50: %s\n", ms(percentiles(p)[0]-percentiles(d)[0]))
	return nil
}

// throughput times downloads of the source's size, direct and through one
// CONNECT tunnel each, from dial to the last byte.
func (b *egressBench) throughput(runs int) error {
	target := b.src.ln.Addr().String()
	d, p, err := alternate(runs, func() error {
		c, err := net.Dial("tcp", target)
		if err != nil {
			return err
		}
		return b.src.download(c)
	}, func() error {
		c, err := b.dialTunnel(target)
		if err != nil {
			return err
		}
		return b.src.download(c)
	})
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if err := b.expect("connect", runs+1, int64(runs+1)*b.src.size); err != nil {
		return err
	}
	fmt.Printf("\ndownload of %d MiB, %d runs per path, time from dial to last byte (MB = 10^6 bytes)\n", b.src.size>>20, runs)
	fmt.Printf("%-40s %12s %12s %12s %14s\n", "path", "best MB/s", "median MB/s", "best Gbit/s", "median Gbit/s")
	rate := func(name string, ds []time.Duration) float64 {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		best, median := float64(b.src.size)/s[0].Seconds(), float64(b.src.size)/s[len(s)/2].Seconds()
		fmt.Printf("%-40s %12.0f %12.0f %12.2f %14.2f\n", name, best/1e6, median/1e6, best*8/1e9, median*8/1e9)
		return median
	}
	rd := rate("direct TCP", d)
	rp := rate("one CONNECT tunnel", p)
	fmt.Printf("the proxy's median is %.0f%% of direct (target: at least 1 Gbit/s through one tunnel)\n", 100*rp/rd)
	return nil
}

// dialTunnel opens a CONNECT tunnel to target through the proxy.
func (b *egressBench) dialTunnel(target string) (net.Conn, error) {
	c, err := net.Dial("tcp", b.proxyURL.Host)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: %w", target, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || br.Buffered() > 0 {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: %s (%d bytes after the answer)", target, resp.Status, br.Buffered())
	}
	return c, nil
}

// expect confirms that the proxy carried what was sent since the last
// check: want allowed events of proto, with at least down bytes to the
// client between them. Without it a client that bypassed the proxy would
// have the bench time the direct path twice. Events are logged as a
// request or tunnel ends, so it waits for them a little.
func (b *egressBench) expect(proto string, want int, down int64) error {
	var evs []egress.Event
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		evs = b.sb.Log(b.seq, 0)
		if len(evs) >= want || time.Now().After(deadline) {
			break
		}
	}
	if len(evs) > 0 {
		b.seq = evs[len(evs)-1].Seq
	}
	var sum int64
	for _, e := range evs {
		if e.Protocol != proto || e.Decision != egress.Allowed || e.Reason != "" {
			return fmt.Errorf("proxy event %d: %s %s:%d %s %s, want an allowed %s", e.Seq, e.Protocol, e.Host, e.Port, e.Decision, e.Reason, proto)
		}
		sum += e.BytesDown
	}
	if len(evs) != want || sum < down {
		return fmt.Errorf("the proxy logged %d %s events carrying %d bytes down, want %d carrying at least %d: traffic did not take the proxy path",
			len(evs), proto, sum, want, down)
	}
	return nil
}

// alternate runs a and b once each untimed (to open connections), then n
// times each, alternating, and returns their durations.
func alternate(n int, a, b func() error) (da, db []time.Duration, err error) {
	if err := a(); err != nil {
		return nil, nil, fmt.Errorf("direct: %w", err)
	}
	if err := b(); err != nil {
		return nil, nil, fmt.Errorf("through the proxy: %w", err)
	}
	for range n {
		t := time.Now()
		if err := a(); err != nil {
			return nil, nil, fmt.Errorf("direct: %w", err)
		}
		t1 := time.Now()
		if err := b(); err != nil {
			return nil, nil, fmt.Errorf("through the proxy: %w", err)
		}
		da, db = append(da, t1.Sub(t)), append(db, time.Since(t1))
	}
	return da, db, nil
}

func get(tr *http.Transport, u string) error {
	resp, err := (&http.Client{Transport: tr}).Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || len(body) != len(benchBody) {
		return fmt.Errorf("GET %s: %s, %d bytes: %q", u, resp.Status, len(body), body)
	}
	return nil
}

// latencyRows prints per-request rows with the rate of one sequential
// client, and what the second path adds at p50.
func latencyRows(direct, proxied row) {
	fmt.Printf("%-40s %9s %9s %9s %9s %9s\n", "path", "p50", "p95", "p99", "max", "req/s")
	for _, r := range []row{direct, proxied} {
		p := percentiles(r.d)
		var sum time.Duration
		for _, d := range r.d {
			sum += d
		}
		fmt.Printf("%-40s %9s %9s %9s %9s %9.0f\n", r.name, ms(p[0]), ms(p[1]), ms(p[2]), ms(p[3]), float64(len(r.d))/sum.Seconds())
	}
	fmt.Printf("added by the proxy at p50: %s (target: at most 1ms)\n", ms(percentiles(proxied.d)[0]-percentiles(direct.d)[0]))
}

// zeroSource serves downloads: a connection that sends "send\n" gets size
// zero bytes, then EOF. The client speaks first because the proxy reads a
// tunnel's first bytes (looking for a TLS ClientHello) before relaying.
type zeroSource struct {
	ln   net.Listener
	size int64
	wg   sync.WaitGroup
}

const zeroRequest = "send\n"

func newZeroSource(size int64) (*zeroSource, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	z := &zeroSource{ln: ln, size: size}
	z.wg.Add(1)
	go z.serve()
	return z, nil
}

func (z *zeroSource) serve() {
	defer z.wg.Done()
	for {
		c, err := z.ln.Accept()
		if err != nil {
			return // closed
		}
		z.wg.Add(1)
		go func() {
			defer z.wg.Done()
			defer c.Close()
			var req [len(zeroRequest)]byte
			if _, err := io.ReadFull(c, req[:]); err != nil || string(req[:]) != zeroRequest {
				return
			}
			buf := make([]byte, 256<<10)
			for left := z.size; left > 0; {
				k, err := c.Write(buf[:min(left, int64(len(buf)))])
				if err != nil {
					return
				}
				left -= int64(k)
			}
		}()
	}
}

// download asks c for the source's bytes, reads them all and closes c.
func (z *zeroSource) download(c net.Conn) error {
	defer c.Close()
	if _, err := io.WriteString(c, zeroRequest); err != nil {
		return err
	}
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := c.Read(buf)
		n += int64(k)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if n != z.size {
		return fmt.Errorf("got %d bytes, want %d", n, z.size)
	}
	return nil
}

func (z *zeroSource) close() {
	z.ln.Close()
	z.wg.Wait()
}
