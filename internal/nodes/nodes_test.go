package nodes_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/store/teststore"
)

// clock is a settable clock for token expiry and node liveness.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// controlPlane is a node registry on a real store (teststore), with its join
// route served on loopback as the API serves it.
type controlPlane struct {
	svc   *nodes.Service
	st    nodes.Store
	url   string
	clock *clock
}

func newControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	// Both stores are nodes.Stores too.
	st := teststore.Open(t).(nodes.Store)
	key := make([]byte, secrets.KeySize)
	rand.Read(key)
	box, err := secrets.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{}
	svc, err := nodes.New(context.Background(), st, box, nodes.Options{HeartbeatEvery: 50 * time.Millisecond, LostAfter: time.Second, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req nodes.JoinRequest
		json.NewDecoder(r.Body).Decode(&req)
		rep, err := svc.Join(r.Context(), req)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "refused", "message": err.Error()}})
			return
		}
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(rep)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	// A second control plane on the store takes the same CA.
	other, err := nodes.New(context.Background(), st, box, nodes.Options{})
	if err != nil {
		t.Fatalf("second service on the same store: %v", err)
	}
	if other.CAHash() != svc.CAHash() {
		t.Errorf("two services on one store have CAs %s and %s", other.CAHash(), svc.CAHash())
	}
	other.Close()
	return &controlPlane{svc: svc, st: st, url: "http://" + ln.Addr().String(), clock: c}
}

func (cp *controlPlane) token(t *testing.T, ttl time.Duration) nodes.TokenReply {
	t.Helper()
	tok, err := cp.svc.MintToken(context.Background(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// node is a joined node serving its status API.
type node struct {
	id      *nodes.Identity
	dataDir string
	addr    string
	srv     *http.Server
	tlsErrs *bytes.Buffer
	mu      *sync.Mutex
}

func join(t *testing.T, cp *controlPlane, name, token, caHash string) (*nodes.Identity, string, string, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	id, err := nodes.Join(context.Background(), nodes.JoinOptions{ControlPlane: cp.url, Token: token, Name: name, Addr: addr, CAHash: caHash, DataDir: dir})
	return id, dir, addr, err
}

// joinReady joins a node named name with a fresh token, serves its
// status and waits until the control plane has it ready.
func joinReady(t *testing.T, cp *controlPlane, name string) (id *nodes.Identity, dir, addr string, srv *node) {
	t.Helper()
	tok := cp.token(t, 0)
	id, dir, addr, err := join(t, cp, name, tok.Token, tok.CAHash)
	if err != nil {
		t.Fatal(err)
	}
	srv = serve(t, id, addr, id.ServerTLS())
	waitState(t, cp, name, nodes.StateReady)
	return id, dir, addr, srv
}

func serve(t *testing.T, id *nodes.Identity, addr string, conf *tls.Config) *node {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{id: id, addr: addr, tlsErrs: &bytes.Buffer{}, mu: &sync.Mutex{}}
	status := func(context.Context) (nodes.Status, error) {
		return nodes.Status{Name: id.Name, Version: "test", Protocol: nodes.Protocol, Capacity: nodes.Capacity{CPUs: 2, MemoryMB: 1024, DiskMB: 2048, Sandboxes: 10}, Use: nodes.Use{Sandboxes: 1}}, nil
	}
	mux := http.NewServeMux()
	mux.Handle(nodes.StatusPath, nodes.StatusHandler(status))
	mux.Handle(nodes.RenewPath, id.RenewHandler())
	mux.Handle(nodes.CertificatePath, id.RenewHandler())
	n.srv = &http.Server{Handler: mux, TLSConfig: conf, ErrorLog: log.New(lockedWriter{n.mu, n.tlsErrs}, "", 0)}
	go n.srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { n.srv.Close() })
	return n
}

func (n *node) errors() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.tlsErrs.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// waitState waits up to 5 s for the node to be in state.
func waitState(t *testing.T, cp *controlPlane, name, state string) nodes.Node {
	t.Helper()
	var n nodes.Node
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n, err = cp.svc.Get(context.Background(), name); err == nil && n.State == state {
			return n
		}
	}
	t.Fatalf("node %s: state %q (last error %q, err %v), want %s", name, n.State, n.LastError, err, state)
	return n
}

// TestJoinHeartbeatLost: a node joins with a token and the CA pin, is
// ready once it answers heartbeats with its status, is lost once it does
// not for LostAfter, and ready again when it is back; drained, it says
// so; removed, it is called no more.
func TestJoinHeartbeatLost(t *testing.T) {
	cp := newControlPlane(t)
	tok := cp.token(t, 0)
	id, _, addr, err := join(t, cp, "n1", tok.Token, tok.CAHash)
	if err != nil {
		t.Fatal(err)
	}
	if n := waitState(t, cp, "n1", nodes.StateLost); n.LastHeartbeat != nil {
		t.Errorf("a node never heard from has a heartbeat: %v", n.LastHeartbeat)
	}
	srv := serve(t, id, addr, id.ServerTLS())
	n := waitState(t, cp, "n1", nodes.StateReady)
	if n.Version != "test" || n.Capacity.Sandboxes != 10 || n.Use.Sandboxes != 1 || n.Addr != addr || n.LastHeartbeat == nil {
		t.Errorf("node after a heartbeat: %+v", n)
	}
	if s := srv.errors(); s != "" {
		t.Errorf("the node refused the control plane: %s", s)
	}
	srv.srv.Close()
	if n := waitState(t, cp, "n1", nodes.StateLost); n.LastError == "" {
		t.Error("a lost node has no last error")
	}
	srv = serve(t, id, addr, id.ServerTLS())
	waitState(t, cp, "n1", nodes.StateReady)
	if _, err := cp.svc.Drain(context.Background(), "n1", true); err != nil {
		t.Fatal(err)
	}
	waitState(t, cp, "n1", nodes.StateDraining)
	if _, err := cp.svc.Drain(context.Background(), "n1", false); err != nil {
		t.Fatal(err)
	}
	waitState(t, cp, "n1", nodes.StateReady)
	// It holds a sandbox (as its status says): rm is refused, then forced.
	if err := cp.svc.Remove(context.Background(), "n1", false); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("rm of a node holding a sandbox: %v, want a conflict", err)
	}
	if err := cp.svc.Remove(context.Background(), "n1", true); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.svc.Get(context.Background(), "n1"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a removed node: %v", err)
	}
	if list, err := cp.svc.List(context.Background()); err != nil || len(list) != 0 {
		t.Errorf("nodes after rm: %v, %v", list, err)
	}
	// Joined again under its name, the node has a new certificate: one
	// presenting the old one (from the same CA, for the same name) is
	// not it.
	srv.srv.Close()
	tok = cp.token(t, 0)
	_, _, addr2, err := join(t, cp, "n1", tok.Token, tok.CAHash)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, id, addr2, id.ServerTLS())
	waitState(t, cp, "n1", nodes.StateLost)
	// The latest error, once a heartbeat got through its handshake in
	// time (a loaded machine makes some of them miss their interval).
	var last string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		n, err := cp.svc.Get(context.Background(), "n1")
		if err != nil {
			t.Fatal(err)
		}
		if last = n.LastError; strings.Contains(last, "not the one issued") {
			return
		}
	}
	t.Errorf("heartbeat to a node with its old certificate: %q", last)
}

// TestDrainKeptAcrossNodeRestart: a joined node drained through the
// control plane stays draining when its process restarts (its identity
// loaded from its data dir, as airlock node starts) and answers again,
// until undrained.
func TestDrainKeptAcrossNodeRestart(t *testing.T) {
	cp := newControlPlane(t)
	_, dir, addr, srv := joinReady(t, cp, "n1")
	if _, err := cp.svc.Drain(context.Background(), "n1", true); err != nil {
		t.Fatal(err)
	}
	waitState(t, cp, "n1", nodes.StateDraining)
	srv.srv.Close()
	waitState(t, cp, "n1", nodes.StateLost)
	id, err := nodes.LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, id, addr, id.ServerTLS())
	// Draining (not lost) needs a heartbeat answered since the restart.
	waitState(t, cp, "n1", nodes.StateDraining)
	if p, err := cp.svc.Placeable(context.Background()); err != nil || len(p) != 0 {
		t.Errorf("placeable after the drained node restarted: %v, %v", p, err)
	}
	if _, err := cp.svc.Drain(context.Background(), "n1", false); err != nil {
		t.Fatal(err)
	}
	waitState(t, cp, "n1", nodes.StateReady)
}

// TestJoinTokens: a token opens once, within its time; a wrong, unknown,
// malformed, expired or spent one is refused as unauthenticated, and a
// bad request leaves the token unspent.
func TestJoinTokens(t *testing.T) {
	cp := newControlPlane(t)
	ctx := context.Background()
	for _, ttl := range []time.Duration{time.Second, 8 * 24 * time.Hour, -time.Minute} {
		if _, err := cp.svc.MintToken(ctx, ttl); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("token with ttl %v: %v, want invalid", ttl, err)
		}
	}
	tok := cp.token(t, time.Hour)
	id, secret, _ := strings.Cut(strings.TrimPrefix(tok.Token, "alj_"), ".")
	wrong := "alj_" + id + "." + strings.Repeat("A", len(secret))
	for _, bad := range []string{"", "nonsense", "alj_", "alj_" + id, wrong, "alj_0000000000000000." + secret} {
		if _, _, _, err := join(t, cp, "n1", bad, ""); err == nil || !strings.Contains(err.Error(), "join token") {
			t.Errorf("join with token %q: %v, want refused", bad, err)
		}
	}
	// Bad requests, with a good token: refused, the token kept.
	keyPEM, csrPEM, _ := nodes.NewKeyAndCSR("n1")
	_ = keyPEM
	for _, req := range []nodes.JoinRequest{
		{Token: tok.Token, Name: "N_1", Addr: "127.0.0.1:1", CSR: string(csrPEM)},
		{Token: tok.Token, Name: "n1", Addr: "nowhere", CSR: string(csrPEM)},
		{Token: tok.Token, Name: "n1", Addr: "0.0.0.0:7071", CSR: string(csrPEM)},
		{Token: tok.Token, Name: "n1", Addr: "127.0.0.1:7071", CSR: "not a csr"},
		{Token: tok.Token, Name: "n1", Addr: "127.0.0.1:7071", CSR: strings.Replace(string(csrPEM), "A", "B", 3)},
	} {
		if _, err := cp.svc.Join(ctx, req); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("join %+v: %v, want invalid", req, err)
		}
	}
	// A wrong CA pin: the node takes nothing (the token is spent: the
	// control plane cannot know).
	pin := "sha256:" + strings.Repeat("0", 64)
	if _, _, _, err := join(t, cp, "n1", tok.Token, pin); err == nil || !strings.Contains(err.Error(), "right control plane") {
		t.Errorf("join with a wrong CA pin: %v", err)
	}
	tok = cp.token(t, time.Hour)
	if _, _, _, err := join(t, cp, "n2", tok.Token, tok.CAHash); err != nil {
		t.Fatalf("join: %v", err)
	}
	if _, _, _, err := join(t, cp, "n3", tok.Token, ""); err == nil || !strings.Contains(err.Error(), "used already") {
		t.Errorf("join with a spent token: %v", err)
	}
	// A name taken: refused, the token kept.
	tok = cp.token(t, time.Hour)
	if _, _, _, err := join(t, cp, "n2", tok.Token, ""); err == nil || !strings.Contains(err.Error(), "joined already") {
		t.Errorf("join under a taken name: %v", err)
	}
	if _, _, _, err := join(t, cp, "n4", tok.Token, ""); err != nil {
		t.Errorf("join after a refused one: %v", err)
	}
	tok = cp.token(t, time.Minute)
	cp.clock.add(2 * time.Minute)
	if _, _, _, err := join(t, cp, "n5", tok.Token, ""); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("join with an expired token: %v", err)
	}
}

// TestMutualTLS: the control plane takes only the certificate it issued
// to a node, and a node answers only the control plane's certificate from
// its CA: another CA's certificates are refused both ways, and so is a
// node's own certificate used to call another node.
func TestMutualTLS(t *testing.T) {
	cp := newControlPlane(t)
	id, dir, addr, good := joinReady(t, cp, "n1")

	// A stranger's certificates, from a CA of its own, with the names
	// each side expects.
	strangerCA, strangerKey := makeCA(t)
	cpCert := issue(t, strangerCA, strangerKey, "control-plane.airlock", x509.ExtKeyUsageClientAuth)
	call := func(cert *tls.Certificate) error {
		conf := &tls.Config{RootCAs: pool(t, dir), ServerName: "n1.node.airlock"}
		if cert != nil {
			conf.Certificates = []tls.Certificate{*cert}
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: conf}}
		defer c.CloseIdleConnections()
		resp, err := c.Get("https://" + addr + nodes.StatusPath)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return errors.New(resp.Status)
			}
		}
		return err
	}
	if err := call(&cpCert); err == nil {
		t.Error("the node answered a control-plane certificate from another CA")
	}
	if err := call(nil); err == nil {
		t.Error("the node answered a call without a certificate")
	}
	own, err := tls.LoadX509KeyPair(filepath.Join(dir, "node", "cert.pem"), filepath.Join(dir, "node", "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := call(&own); err == nil {
		t.Error("the node answered a node's certificate")
	}
	if s := good.errors(); !strings.Contains(s, "certificate") && !strings.Contains(s, "control plane") {
		t.Errorf("the node's refusals were not TLS ones: %q", s)
	}

	// The node's place taken by a server with the right name from the
	// stranger's CA: the control plane does not take it.
	good.srv.Close()
	fakeCert := issue(t, strangerCA, strangerKey, "n1.node.airlock", x509.ExtKeyUsageServerAuth)
	conf := id.ServerTLS()
	conf.GetCertificate, conf.Certificates = nil, []tls.Certificate{fakeCert}
	serve(t, id, addr, conf)
	waitState(t, cp, "n1", nodes.StateLost)
	// Each heartbeat has 50 ms here: under load one may run out of time
	// before the handshake fails, so the last error is read until it is
	// the handshake's.
	var n nodes.Node
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n, err = cp.svc.Get(context.Background(), "n1"); err == nil && strings.Contains(n.LastError, "certificate") {
			break
		}
	}
	if n.State != nodes.StateLost || !strings.Contains(n.LastError, "certificate") {
		t.Errorf("heartbeat to an impostor: %s, %q, want lost with a certificate error", n.State, n.LastError)
	}
}

func pool(t *testing.T, dataDir string) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	b, err := readFile(filepath.Join(dataDir, "node", "ca.pem"))
	if err != nil || !p.AppendCertsFromPEM(b) {
		t.Fatalf("node CA: %v", err)
	}
	return p
}

func makeCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Airlock node CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c, key
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

// TestCertificateRenewal: once a third of a node's certificate's life is
// left, the control plane has the node make a new key, signs its request
// and records the renewed certificate, which the node keeps and serves
// from then on, after a restart too; the control plane's own client
// certificate is made again as its end nears. Certificates the node is
// handed that are not for its pending key, or end no later than its own,
// are refused.
func TestCertificateRenewal(t *testing.T) {
	cp := newControlPlane(t)
	tok := cp.token(t, 0)
	id, dir, addr, err := join(t, cp, "n1", tok.Token, tok.CAHash)
	if err != nil {
		t.Fatal(err)
	}
	// The node checks time by the test's clock, as the control plane
	// does, so that both can live 250 days on.
	conf := id.ServerTLS()
	conf.Time = cp.clock.now
	srv := serve(t, id, addr, conf)
	before := waitState(t, cp, "n1", nodes.StateReady)

	cp.clock.add(250 * 24 * time.Hour)
	var after nodes.Node
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if after, err = cp.svc.Get(context.Background(), "n1"); err == nil && after.CertSerial != before.CertSerial {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the certificate was not renewed: %+v, %v; node: %s", after, err, srv.errors())
		}
	}
	if got := after.CertExpiresAt.Sub(before.CertExpiresAt); got < 249*24*time.Hour {
		t.Errorf("renewed certificate ends %s after the first, want about 250 days", got)
	}
	if !id.CertExpiresAt().Equal(after.CertExpiresAt) {
		t.Errorf("the node serves a certificate ending %s, the control plane recorded %s", id.CertExpiresAt(), after.CertExpiresAt)
	}

	// Restarted from its data dir, the node has the renewed pair, and a
	// new connection (with the control plane's client certificate made
	// again: the first ended 220 days ago by the test's clock) takes it.
	srv.srv.Close()
	again, err := nodes.LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.CertExpiresAt().Equal(after.CertExpiresAt) {
		t.Errorf("restarted node's certificate ends %s, want %s", again.CertExpiresAt(), after.CertExpiresAt)
	}
	conf = again.ServerTLS()
	conf.Time = cp.clock.now
	srv = serve(t, again, addr, conf)
	cp.clock.add(time.Hour) // the heartbeats before the restart are an hour old
	waitState(t, cp, "n1", nodes.StateReady)
	if n, _ := cp.svc.Get(context.Background(), "n1"); n.CertSerial != after.CertSerial {
		t.Errorf("after the restart the control plane takes %s, want the renewed %s", n.CertSerial, after.CertSerial)
	}

	// What the node refuses: a certificate with no request pending, or
	// its own (ending no later than itself).
	put := func(certPEM string) int {
		h := again.RenewHandler()
		body, _ := json.Marshal(nodes.CertificateRequest{Certificate: certPEM})
		req := httptest.NewRequest(http.MethodPut, nodes.CertificatePath, bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	own, err := readFile(filepath.Join(dir, "node", "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if code := put(string(own)); code != http.StatusBadRequest {
		t.Errorf("a certificate with no request pending: %d, want 400", code)
	}
	rec := httptest.NewRecorder()
	again.RenewHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, nodes.RenewPath, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("certificate request: %d %s", rec.Code, rec.Body)
	}
	if code := put(string(own)); code != http.StatusBadRequest {
		t.Errorf("its own certificate, not for the pending key: %d, want 400", code)
	}
	if code := put("not a certificate"); code != http.StatusBadRequest {
		t.Errorf("garbage: %d, want 400", code)
	}
	if !again.CertExpiresAt().Equal(after.CertExpiresAt) {
		t.Errorf("a refused certificate changed the node's: ends %s", again.CertExpiresAt())
	}
}
