package nodes

import (
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
	cert tls.Certificate
	ca   *CA
	// anyCert: take any certificate from the CA for the node's name, not
	// only the one issued at join (in a cluster, where a node issues its
	// own at each start).
	anyCert bool

	mu      sync.Mutex
	clients map[string]*nodeClient
}

type nodeClient struct {
	serial, addr string
	c            *http.Client
}

func newControlPlane(ca *CA, now time.Time) (*controlPlane, error) {
	cert, err := ca.controlPlaneCert(now)
	if err != nil {
		return nil, err
	}
	return &controlPlane{cert: cert, ca: ca, clients: map[string]*nodeClient{}}, nil
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
	serial := n.CertSerial
	conf := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cp.cert},
		RootCAs:      cp.ca.pool(),
		ServerName:   n.Name + nodeDomain,
		// The chain and name are checked as usual first; then the serial:
		// a removed node that joined again, or a certificate issued for
		// the name before, is not this node.
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || serialHex(cs.PeerCertificates[0]) != serial {
				return errors.New("the node's certificate is not the one issued to it at join")
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

// status asks node n for its status.
func (cp *controlPlane) status(ctx context.Context, n Node) (Status, error) {
	var st Status
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+n.Addr+StatusPath, nil)
	if err != nil {
		return st, err
	}
	resp, err := cp.client(n).Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return st, fmt.Errorf("node answered %s: %s", resp.Status, b)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&st); err != nil {
		return st, fmt.Errorf("node status: %w", err)
	}
	return st, nil
}

// ServerTLS is the node API's TLS configuration: the node's certificate,
// and a client certificate from its CA for the control plane's name, or
// no connection.
func (id *Identity) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.cert},
		ClientCAs:    id.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		NextProtos:   []string{"h2", "http/1.1"},
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
