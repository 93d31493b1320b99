package egress

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// The zone of the test resolver: both names are 127.0.0.1, which only
// the explicit IP rule lets the proxy dial.
const (
	mitmBound = "bound.test"
	mitmOther = "other.test"
)

// mitmEnv is a proxy attached to one sandbox, a resolver for the test
// names, a TLS echo server (certificate from a test CA given to the proxy
// as Config.RootCAs) and a plain HTTP echo server.
type mitmEnv struct {
	t         *testing.T
	sb        *Sandbox
	ca        *CA
	proxyURL  *url.URL
	tlsPort   int
	plainPort int
	upRoots   *x509.CertPool // trusts the echo server's CA
	events    *mitmSink
	seen      *mitmSeen
}

// mitmOptions vary an environment.
type mitmOptions struct {
	noRootCAs bool         // the proxy gets no extra roots
	upstream  http.Handler // the TLS server's handler instead of the echo
}

func newMitmEnv(t *testing.T, opt mitmOptions) *mitmEnv {
	t.Helper()
	e := &mitmEnv{t: t, events: newMitmSink(), seen: &mitmSeen{}}
	dns := startMitmDNS(t)
	upCert, upRoots := mitmUpstreamCert(t)
	e.upRoots = upRoots
	var h http.Handler = mitmEchoHandler(e.seen)
	if opt.upstream != nil {
		h = opt.upstream
	}
	tlsSrv := httptest.NewUnstartedServer(h)
	tlsSrv.TLS = &tls.Config{Certificates: []tls.Certificate{upCert}}
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	plainSrv := httptest.NewServer(mitmEchoHandler(e.seen))
	t.Cleanup(plainSrv.Close)
	e.tlsPort = tlsSrv.Listener.Addr().(*net.TCPAddr).Port
	e.plainPort = plainSrv.Listener.Addr().(*net.TCPAddr).Port
	var allow []string
	for _, p := range []int{e.tlsPort, e.plainPort} {
		allow = append(allow, fmt.Sprintf("%s:%d", mitmBound, p), fmt.Sprintf("%s:%d", mitmOther, p), fmt.Sprintf("127.0.0.1:%d", p))
	}
	rules, err := Compile(Policy{Mode: ModeAllowlist, Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{DNS: dns, RootCAs: upRoots, OnEvent: e.events.add,
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}} // the test servers' address
	if opt.noRootCAs {
		cfg.RootCAs = nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.proxyURL = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	if e.ca, err = NewCA("sb-mitm"); err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the sandbox closes, then its events are
	// checked for leaked values.
	t.Cleanup(func() { e.events.checkNoValues(t) })
	if cfg.LogSize == 0 {
		cfg.LogSize = 10000 // the tests read events through Log
	}
	e.sb = New(cfg).Attach("sb-mitm", "tenant-1", rules, ln, nil)
	t.Cleanup(func() { e.sb.Close() })
	return e
}

// setSecrets binds and remembers every value, for the leak check.
func (e *mitmEnv) setSecrets(bs ...Binding) {
	e.t.Helper()
	for _, b := range bs {
		e.events.secret(b.Value)
	}
	if err := e.sb.SetSecrets(e.ca, bs); err != nil {
		e.t.Fatal(err)
	}
}

// client is a sandbox program using the proxy, trusting roots.
func (e *mitmEnv) client(roots *x509.CertPool) *http.Client {
	tr := &http.Transport{Proxy: http.ProxyURL(e.proxyURL), TLSClientConfig: &tls.Config{RootCAs: roots}}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// sandboxRoots trusts the sandbox CA only, as the sandbox's trust store.
func (e *mitmEnv) sandboxRoots() *x509.CertPool {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(e.ca.CertPEM()) {
		e.t.Fatal("sandbox CA PEM does not parse")
	}
	return pool
}

func (e *mitmEnv) url(host, path string) string {
	return fmt.Sprintf("https://%s:%d%s", host, e.tlsPort, path)
}

// tunnel opens a CONNECT tunnel to host:tlsPort and TLS through it,
// trusting the sandbox CA, for requests a well-behaved client would not
// send.
func (e *mitmEnv) tunnel(host string) *tls.Conn {
	e.t.Helper()
	c, err := net.Dial("tcp", e.proxyURL.Host)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	target := fmt.Sprintf("%s:%d", host, e.tlsPort)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	buf := make([]byte, len("HTTP/1.1 200 Connection established\r\n\r\n"))
	if _, err := io.ReadFull(c, buf); err != nil || !bytes.HasPrefix(buf, []byte("HTTP/1.1 200")) {
		e.t.Fatalf("CONNECT: %q, %v", buf, err)
	}
	tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: e.sandboxRoots()})
	if err := tc.Handshake(); err != nil {
		e.t.Fatalf("TLS through the tunnel: %v", err)
	}
	return tc
}

// mitmSeen is what the echo servers received.
type mitmSeen struct {
	mu   sync.Mutex
	reqs []mitmSeenReq
}

type mitmSeenReq struct {
	Host   string
	Header http.Header
	Body   string
	TE     []string
}

func (s *mitmSeen) all() []mitmSeenReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]mitmSeenReq(nil), s.reqs...)
}

func (s *mitmSeen) last(t *testing.T) mitmSeenReq {
	t.Helper()
	all := s.all()
	if len(all) == 0 {
		t.Fatal("the server saw no request")
	}
	return all[len(all)-1]
}

// mitmEchoHandler answers with what it got: the Authorization header in
// X-Echo-Authorization and, in the body, the headers and the body.
// /upgrade switches to an echo protocol.
func mitmEchoHandler(seen *mitmSeen) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen.mu.Lock()
		seen.reqs = append(seen.reqs, mitmSeenReq{Host: r.Host, Header: r.Header.Clone(), Body: string(body), TE: r.TransferEncoding})
		seen.mu.Unlock()
		switch r.URL.Path {
		case "/upgrade":
			mitmUpgradeEcho(w, r)
			return
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("X-Echo-Authorization", r.Header.Get("Authorization"))
		fmt.Fprintf(w, "authorization=%s\ncookie=%s\nbody=%s\n", r.Header.Get("Authorization"), r.Header.Get("Cookie"), body)
	})
}

func mitmUpgradeEcho(w http.ResponseWriter, r *http.Request) {
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\nX-Echo-Authorization: %s\r\n\r\n", r.Header.Get("Authorization"))
	brw.Flush()
	io.Copy(c, brw)
}

// mitmUpstreamCert makes a CA the proxy is told to trust and a server
// certificate from it for both test names.
func mitmUpstreamCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	mk := func(tmpl, parent *x509.Certificate, signer *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if signer == nil {
			signer = key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return cert, key
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: randSerial(), Subject: pkix.Name{CommonName: "airlock test upstream CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caCert, caKey := mk(caTmpl, caTmpl, nil)
	leafTmpl := &x509.Certificate{SerialNumber: randSerial(), Subject: pkix.Name{CommonName: mitmBound},
		DNSNames: []string{mitmBound, mitmOther}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leaf, leafKey := mk(leafTmpl, caCert, caKey)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: leafKey, Leaf: leaf}, pool
}

// startMitmDNS serves A records for the test names (127.0.0.1), no AAAA,
// and NXDOMAIN for anything else, until the test ends.
func startMitmDNS(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		pc.Close()
		<-done
	})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out, err := mitmDNSAnswer(buf[:n]); err == nil {
				pc.WriteTo(out, addr)
			}
		}
	}()
	return pc.LocalAddr().String()
}

func mitmDNSAnswer(q []byte) ([]byte, error) {
	var m dnsmessage.Message
	if err := m.Unpack(q); err != nil {
		return nil, err
	}
	if len(m.Questions) != 1 {
		return nil, errors.New("want one question")
	}
	qn := m.Questions[0]
	name := strings.TrimSuffix(strings.ToLower(qn.Name.String()), ".")
	m.Header.Response, m.Header.Authoritative, m.Header.RecursionAvailable = true, true, true
	m.Answers, m.Authorities, m.Additionals = nil, nil, nil
	switch {
	case name != mitmBound && name != mitmOther:
		m.Header.RCode = dnsmessage.RCodeNameError
	case qn.Type == dnsmessage.TypeA:
		m.Answers = []dnsmessage.Resource{{
			Header: dnsmessage.ResourceHeader{Name: qn.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
			Body:   &dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}},
		}}
	}
	return m.Pack()
}

// mitmSink collects a sandbox's events as they are logged.
type mitmSink struct {
	mu     sync.Mutex
	cond   *sync.Cond
	evs    []Event
	values [][]byte
}

func newMitmSink() *mitmSink {
	s := &mitmSink{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *mitmSink) add(e Event) {
	s.mu.Lock()
	s.evs = append(s.evs, e)
	s.mu.Unlock()
	s.cond.Broadcast()
}

func (s *mitmSink) secret(v []byte) {
	s.mu.Lock()
	s.values = append(s.values, append([]byte(nil), v...))
	s.mu.Unlock()
}

func (s *mitmSink) all() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.evs...)
}

// wait returns the first event matching pred, waiting for it to be
// logged: some are logged after the answer reached the client. The
// deadline only keeps a broken proxy from hanging the suite.
func (s *mitmSink) wait(t *testing.T, what string, pred func(Event) bool) Event {
	t.Helper()
	expired := false
	timer := time.AfterFunc(10*time.Second, func() {
		s.mu.Lock()
		expired = true
		s.mu.Unlock()
		s.cond.Broadcast()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for next := 0; ; s.cond.Wait() {
		for ; next < len(s.evs); next++ {
			if pred(s.evs[next]) {
				return s.evs[next]
			}
		}
		if expired {
			t.Fatalf("no %s event; got %+v", what, s.evs)
		}
	}
}

// checkNoValues fails if any logged event holds a bound value.
func (s *mitmSink) checkNoValues(t *testing.T) {
	t.Helper()
	for _, e := range s.all() {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range s.values {
			if bytes.Contains(b, v) {
				t.Errorf("event %s holds a secret value", b)
			}
		}
	}
}
