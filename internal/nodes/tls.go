package nodes

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// StatusPath is the node API's heartbeat route.
const StatusPath = "/node/v1/status"

func marshalKey(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("node CA key: %w", err)
	}
	return der, nil
}

// controlPlane is the control plane's client side of the node API: one
// HTTP client per node, which takes from the node only the certificate
// it was given at join (by serial) for that node's name.
type controlPlane struct {
	signer *CA // makes its client certificate
	ca     *CA // the nodes' certificates come from it
	now    func() time.Time
	// anyCert: take any certificate from the CA for the node's name, not
	// only the one issued at join (in a cluster, where a node issues its
	// own at each start).
	anyCert bool

	mu      sync.Mutex
	clients map[string]*nodeClient
	cert    tls.Certificate // the current client certificate
}

type nodeClient struct {
	serial, addr string
	c            *http.Client
}

func newControlPlane(signer, ca *CA, now func() time.Time) (*controlPlane, error) {
	cp := &controlPlane{signer: signer, ca: ca, now: now, clients: map[string]*nodeClient{}}
	if _, err := cp.clientCert(); err != nil {
		return nil, fmt.Errorf("control plane certificate: %w", err)
	}
	return cp, nil
}

// clientCert is the control plane's client certificate, made again once
// a third of its life is left: a control plane that runs for months
// keeps calling its nodes. Connections made with the one before keep it.
func (cp *controlPlane) clientCert() (*tls.Certificate, error) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	now := cp.now()
	if cp.cert.Leaf != nil && cp.cert.Leaf.NotAfter.Sub(now) > cpLifetime/3 {
		return &cp.cert, nil
	}
	cert, err := cp.signer.controlPlaneCert(now)
	if err != nil {
		return nil, err
	}
	cp.cert = cert
	return &cp.cert, nil
}

// client returns the HTTP client for n, made again when its certificate
// or address changed.
func (cp *controlPlane) client(n Node) *http.Client {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if c := cp.clients[n.Name]; c != nil && c.serial == n.CertSerial && c.addr == n.Addr {
		return c.c
	}
	if old := cp.clients[n.Name]; old != nil {
		old.c.CloseIdleConnections()
	}
	tr := &http.Transport{
		TLSClientConfig:     cp.tlsConfig(n),
		ForceAttemptHTTP2:   true,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		// A node that dies without a word (its host gone) is noticed by
		// its streams within half a minute, not at TCP keepalive's pace.
		HTTP2: &http.HTTP2Config{SendPingTimeout: 15 * time.Second, PingTimeout: 10 * time.Second},
	}
	c := &nodeClient{serial: n.CertSerial, addr: n.Addr, c: &http.Client{Transport: tr}}
	cp.clients[n.Name] = c
	return c.c
}

// tlsConfig is the client side of the mutual TLS with node n.
func (cp *controlPlane) tlsConfig(n Node) *tls.Config {
	serial, expires := n.CertSerial, n.CertExpiresAt
	conf := &tls.Config{
		MinVersion:           tls.VersionTLS13,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cp.clientCert() },
		RootCAs:              cp.ca.pool(),
		ServerName:           n.Name + nodeDomain,
		Time:                 cp.now,
		// The chain and name are checked as usual first; then that it is
		// the newest certificate issued for the name: the one given at
		// join, or one the node was given since (renewed, later to end,
		// and held only by the node that made its key). A removed node
		// that joined again, or a certificate issued for the name before,
		// is not this node.
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the node presented no certificate")
			}
			if leaf := cs.PeerCertificates[0]; serialHex(leaf) != serial && !leaf.NotAfter.After(expires) {
				return errors.New("the node's certificate is not the one issued to it at join, nor a renewal of it")
			}
			return nil
		},
	}
	if cp.anyCert {
		conf.VerifyConnection = nil
	}
	return conf
}

// forget drops the client of a removed node.
func (cp *controlPlane) forget(name string) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if c := cp.clients[name]; c != nil {
		c.c.CloseIdleConnections()
		delete(cp.clients, name)
	}
}

func (cp *controlPlane) close() {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	for name, c := range cp.clients {
		c.c.CloseIdleConnections()
		delete(cp.clients, name)
	}
}

// status asks node n for its status, and returns the certificate it
// answered with.
func (cp *controlPlane) status(ctx context.Context, n Node) (Status, *x509.Certificate, error) {
	var st Status
	leaf, err := cp.call(ctx, n, http.MethodGet, StatusPath, nil, &st)
	return st, leaf, err
}

// call makes one JSON call to node n's API: in (nil: no body), the
// answer decoded into out. It returns the certificate the node answered
// with.
func (cp *controlPlane) call(ctx context.Context, n Node, method, path string, in, out any) (*x509.Certificate, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://"+n.Addr+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := cp.client(n).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("node answered %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(out); err != nil {
		return nil, fmt.Errorf("node %s %s: %w", method, path, err)
	}
	var leaf *x509.Certificate
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		leaf = resp.TLS.PeerCertificates[0]
	}
	return leaf, nil
}

// ServerTLS is the node API's TLS configuration: the node's certificate,
// and a client certificate from its CA for the control plane's name, or
// no connection.
func (id *Identity) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS13,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return id.current(), nil },
		ClientCAs:      id.pool,
		ClientAuth:     tls.RequireAndVerifyClientCert,
		NextProtos:     []string{"h2", "http/1.1"},
		// The chain (to this CA only, for client authentication) is
		// verified first; a node's own certificate, also from the CA, is
		// refused here: it is a server certificate for another name.
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !slices.Contains(cs.PeerCertificates[0].DNSNames, controlPlaneName) {
				return errors.New("only the control plane may call a node")
			}
			return nil
		},
	}
}
