package e2e

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestE2BNodeHostPorts: the unmodified e2b SDK with E2B_DOMAIN set to the
// server's --e2b-domain and no E2B_SANDBOX_URL runs commands through
// https://49983-ID.DOMAIN, and sandbox.getHost(port) reaches a web server
// in the sandbox, with its traffic token when it was created without
// public traffic (e2e/e2bnode/hostports.mjs). Between them is what a
// deployment puts there: TLS for *.DOMAIN in front of the server.
func TestE2BNodeHostPorts(t *testing.T) {
	node, dir := nodeProject(t, "e2bnode", "e2b", "the E2B SDK test")
	if v, err := exec.Command(node, "-p", "process.versions.node").Output(); err != nil || !nodeAtLeast(strings.TrimSpace(string(v)), 20, 18, 1) {
		linuxtest.Lacking(t, "the E2B SDK test", fmt.Sprintf("the e2b SDK needs node >= 20.18.1, found %q (%v)", strings.TrimSpace(string(v)), err))
	}
	s := startServer(t, "", "--e2b-domain", hostDomain)
	edge := startTLSEdge(t, strings.TrimPrefix(s.url, "http://"), hostDomain)

	cmd := exec.Command(node, "hostports.mjs", s.url, s.adminKey, hostDomain, edge.url)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HTTPS_PROXY=", "HTTP_PROXY=", "https_proxy=", "http_proxy=", "NODE_EXTRA_CA_CERTS="+edge.caFile)
	out := runNode(t, cmd, 3*time.Minute)
	var ids []string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "SANDBOX "); ok {
			ids = append(ids, strings.TrimSpace(rest))
		}
	}
	if len(ids) != 2 {
		t.Fatalf("hostports.mjs printed %d SANDBOX lines, want 2:\n%s", len(ids), out)
	}
	// The envd calls and the fetches went through host names, and the
	// sandbox's audit log has the commands and the files.
	edge.mu.Lock()
	for _, h := range []string{"49983-" + ids[0], "8000-" + ids[0], "49983-" + ids[1], "8000-" + ids[1]} {
		if edge.named[h+"."+hostDomain] == 0 {
			t.Errorf("no TLS connection to %s.%s went through the edge; it saw %v", h, hostDomain, edge.named)
		}
	}
	edge.mu.Unlock()
	seen := map[string]bool{}
	for _, e := range must[[]client.AuditEvent](t)(s.admin().AuditEvents(ctx, ids[0], client.AuditQuery{})) {
		seen[e.Type] = true
	}
	for _, typ := range []string{"exec.started", "file.written", "file.read", "sandbox.destroyed"} {
		if !seen[typ] {
			t.Errorf("audit log of %s has no %s event", ids[0], typ)
		}
	}
}

// tlsEdge is what a deployment puts in front of a server with
// --e2b-domain: TLS with a certificate for *.DOMAIN, the plaintext passed
// to the server. Clients reach it as an HTTP CONNECT proxy, so that
// nothing resolves DOMAIN: a CONNECT to a name under it is answered with
// TLS under that certificate, one to the server's own address is a plain
// tunnel (the SDK's control-plane calls), and any other is refused.
type tlsEdge struct {
	url, caFile    string
	domain, server string
	cfg            *tls.Config
	ln             net.Listener
	wg             sync.WaitGroup
	mu             sync.Mutex
	conns          map[net.Conn]bool
	named          map[string]int // TLS connections by the host name asked
}

func startTLSEdge(t *testing.T, server, domain string) *tlsEdge {
	t.Helper()
	cert, caPEM := edgeCertificate(t, domain)
	e := &tlsEdge{domain: domain, server: server, conns: map[net.Conn]bool{}, named: map[string]int{},
		cfg: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}}
	e.caFile = filepath.Join(t.TempDir(), "edge-ca.pem")
	if err := os.WriteFile(e.caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	if e.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	e.url = "http://" + e.ln.Addr().String()
	e.wg.Add(1)
	go e.serve()
	t.Cleanup(e.close)
	return e
}

func (e *tlsEdge) serve() {
	defer e.wg.Done()
	for {
		c, err := e.ln.Accept()
		if err != nil {
			return
		}
		e.mu.Lock()
		e.conns[c] = true
		e.mu.Unlock()
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.handle(c)
			e.mu.Lock()
			delete(e.conns, c)
			e.mu.Unlock()
		}()
	}
}

// close stops the edge and waits for every connection's goroutines.
func (e *tlsEdge) close() {
	e.ln.Close()
	e.mu.Lock()
	for c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

func (e *tlsEdge) handle(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil || req.Method != http.MethodConnect {
		io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return
	}
	host, _, _ := net.SplitHostPort(req.Host)
	var down net.Conn = bufferedConn{c, br}
	switch {
	case strings.HasSuffix(host, "."+e.domain):
		io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n")
		tc := tls.Server(down, e.cfg)
		if err := tc.Handshake(); err != nil {
			return
		}
		down = tc
		e.mu.Lock()
		e.named[host]++
		e.mu.Unlock()
	case req.Host == e.server:
		io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n")
	default:
		io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
		return
	}
	up, err := net.Dial("tcp", e.server)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, down); done <- struct{}{} }()
	go func() { io.Copy(down, up); done <- struct{}{} }()
	<-done // either side ended: the connection is over
	up.Close()
	c.Close()
	<-done
}

// bufferedConn reads what its reader buffered before the connection.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// edgeCertificate makes a CA, valid for an hour, and a certificate it
// signed for *.domain; it returns the certificate and the CA as PEM.
func edgeCertificate(t *testing.T, domain string) (tls.Certificate, []byte) {
	t.Helper()
	caKey := must[*ecdsa.PrivateKey](t)(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "airlock e2e edge CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER := must[[]byte](t)(x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey))
	caCert := must[*x509.Certificate](t)(x509.ParseCertificate(caDER))
	key := must[*ecdsa.PrivateKey](t)(ecdsa.GenerateKey(elliptic.P256(), rand.Reader))
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "*." + domain}, DNSNames: []string{"*." + domain},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER := must[[]byte](t)(x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey))
	return tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}
