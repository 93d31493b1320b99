package nodes

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Identity is a node's side of its membership: its name, its certificate
// and key, the CA it takes the control plane's certificate from, and the
// control plane it joined. It is kept in <data-dir>/node/ (the key 0600).
type Identity struct {
	Name         string    `json:"name"`
	ControlPlane string    `json:"control_plane"`
	Addr         string    `json:"addr"`
	JoinedAt     time.Time `json:"joined_at"`

	pool    *x509.CertPool
	dataDir string // where it is kept; "" for one made at each start

	mu      sync.Mutex
	cert    tls.Certificate
	pending []byte // the key of a renewal asked for, in PEM
}

// Files of an identity, under IdentityDir.
const (
	identityFile = "node.json"
	certFile     = "cert.pem"
	keyFile      = "key.pem"
	caFile       = "ca.pem"
)

// IdentityDir is where a node keeps its identity in its data dir.
func IdentityDir(dataDir string) string { return filepath.Join(dataDir, "node") }

// ErrNoIdentity: the data dir holds no node identity (the node has not
// joined yet).
var ErrNoIdentity = errors.New("no node identity")

// LoadIdentity reads the identity kept in dataDir.
func LoadIdentity(dataDir string) (*Identity, error) {
	dir := IdentityDir(dataDir)
	b, err := os.ReadFile(filepath.Join(dir, identityFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoIdentity
	}
	if err != nil {
		return nil, fmt.Errorf("node identity: %w", err)
	}
	var id Identity
	if err := json.Unmarshal(b, &id); err != nil {
		return nil, fmt.Errorf("node identity %s: %w", filepath.Join(dir, identityFile), err)
	}
	if id.cert, err = loadKeyPair(dir); err != nil {
		return nil, fmt.Errorf("node identity: %w", err)
	}
	id.dataDir = dataDir
	caPEM, err := os.ReadFile(filepath.Join(dir, caFile))
	if err != nil {
		return nil, fmt.Errorf("node identity: %w", err)
	}
	ca, err := parseCert(caPEM)
	if err != nil {
		return nil, fmt.Errorf("node identity: CA: %w", err)
	}
	id.pool = x509.NewCertPool()
	id.pool.AddCert(ca)
	return &id, nil
}

// loadKeyPair reads the node's key and certificate. A renewed pair is
// kept in the key's file alone, written in one rename, so that a node
// stopped midway never pairs a new certificate with an old key.
func loadKeyPair(dir string) (tls.Certificate, error) {
	keyPEM, err := os.ReadFile(filepath.Join(dir, keyFile))
	if err != nil {
		return tls.Certificate{}, err
	}
	if bytes.Contains(keyPEM, []byte("-----BEGIN "+certPEMType+"-----")) {
		return tls.X509KeyPair(keyPEM, keyPEM)
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, certFile))
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// CertExpiresAt is when the node's certificate ends.
func (id *Identity) CertExpiresAt() time.Time {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.cert.Leaf.NotAfter
}

// current is the certificate the node serves now.
func (id *Identity) current() *tls.Certificate {
	id.mu.Lock()
	defer id.mu.Unlock()
	c := id.cert
	return &c
}

// Routes of the node API that renew the node's certificate: the control
// plane asks for a request (the node makes a new key, which never leaves
// it), signs it, and hands the certificate back.
const (
	RenewPath       = "/node/v1/certificate/request"
	CertificatePath = "/node/v1/certificate"
)

// RenewReply is a node's certificate request, in PEM.
type RenewReply struct {
	CSR string `json:"csr"`
}

// CertificateRequest gives a node its renewed certificate, in PEM.
type CertificateRequest struct {
	Certificate string `json:"certificate"`
}

// CertificateReply is the certificate a node serves from now on.
type CertificateReply struct {
	Serial    string    `json:"serial"`
	ExpiresAt time.Time `json:"expires_at"`
}

// RenewHandler serves the renewal routes (the mux before the node API
// takes only the control plane's calls). A node whose certificate is
// made at each start (in a cluster) refuses them.
func (id *Identity) RenewHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+RenewPath, func(w http.ResponseWriter, r *http.Request) {
		if id.dataDir == "" {
			http.Error(w, "this node's certificate is made at each start: restart it to renew", http.StatusConflict)
			return
		}
		keyPEM, csrPEM, err := NewKeyAndCSR(id.Name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		id.mu.Lock()
		id.pending = keyPEM
		id.mu.Unlock()
		writeJSON(w, RenewReply{CSR: string(csrPEM)})
	})
	mux.HandleFunc("PUT "+CertificatePath, func(w http.ResponseWriter, r *http.Request) {
		var req CertificateRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		leaf, err := id.install([]byte(req.Certificate))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, CertificateReply{Serial: serialHex(leaf), ExpiresAt: leaf.NotAfter})
	})
	return mux
}

// install checks a renewed certificate (for the pending key and this
// node's name, from its CA, later to end than the one it has), keeps it
// and serves it from now on.
func (id *Identity) install(certPEM []byte) (*x509.Certificate, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.pending == nil {
		return nil, errors.New("no certificate request is pending: ask for one first")
	}
	cert, err := tls.X509KeyPair(certPEM, id.pending)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	// Checked as of its own start: the control plane's clock, which
	// checks it on every call, is the one that counts, not this host's.
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: id.pool, DNSName: id.Name + nodeDomain, CurrentTime: cert.Leaf.NotBefore,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	if !cert.Leaf.NotAfter.After(id.cert.Leaf.NotAfter) {
		return nil, errors.New("certificate: it ends no later than the one the node has")
	}
	pair := append(append([]byte(nil), id.pending...), certPEM...)
	dir := IdentityDir(id.dataDir)
	if err := writeFileAtomic(filepath.Join(dir, keyFile), pair, 0o600); err != nil {
		return nil, fmt.Errorf("node identity: %w", err)
	}
	// The certificate's own file, for people and tools; the pair above
	// is what a start reads.
	if err := writeFileAtomic(filepath.Join(dir, certFile), certPEM, 0o644); err != nil {
		return nil, fmt.Errorf("node identity: %w", err)
	}
	id.cert, id.pending = cert, nil
	return cert.Leaf, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// JoinOptions is what `airlock node --join` is given.
type JoinOptions struct {
	ControlPlane string // the control plane's API URL
	Token        string
	Name         string
	Addr         string // where the node serves its API
	// CAHash, when set, is the only node CA the node takes
	// ("sha256:<hex>", as airlock nodes token prints it).
	CAHash  string
	DataDir string
	Client  *http.Client // nil: http.DefaultClient
}

// Join exchanges a join token for the node's identity and keeps it in the
// data dir. The key never leaves the node: the control plane signs a
// request for it.
func Join(ctx context.Context, o JoinOptions) (*Identity, error) {
	u, err := url.Parse(o.ControlPlane)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--join %q: want the control plane's URL, http(s)://HOST:PORT", o.ControlPlane)
	}
	if o.CAHash != "" && (!strings.HasPrefix(o.CAHash, caHashPrefix) || len(o.CAHash) != len(caHashPrefix)+64) {
		return nil, fmt.Errorf("--ca-hash %q: want sha256:<64 hex digits>, as airlock nodes token prints it", o.CAHash)
	}
	if err := CheckName(o.Name); err != nil {
		return nil, err
	}
	keyPEM, csrPEM, err := NewKeyAndCSR(o.Name)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(JoinRequest{Token: o.Token, Name: o.Name, Addr: o.Addr, CSR: string(csrPEM)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(o.ControlPlane, "/")+"/v1/nodes/join", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	c := o.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("join %s: %w", o.ControlPlane, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("join %s: %w", o.ControlPlane, err)
	}
	if resp.StatusCode != http.StatusCreated {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return nil, fmt.Errorf("join %s: refused (%s): %s", o.ControlPlane, e.Error.Code, e.Error.Message)
		}
		return nil, fmt.Errorf("join %s: %s", o.ControlPlane, resp.Status)
	}
	var rep JoinReply
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("join %s: answer: %w", o.ControlPlane, err)
	}
	id, err := checkJoinReply(rep, o, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("join %s: %w", o.ControlPlane, err)
	}
	if err := id.save(o.DataDir, keyPEM, []byte(rep.Certificate), []byte(rep.CA)); err != nil {
		return nil, err
	}
	id.dataDir = o.DataDir
	return id, nil
}

// checkJoinReply takes the CA (only the pinned one, if pinned) and checks
// that the certificate is for this node's key and name, from that CA.
func checkJoinReply(rep JoinReply, o JoinOptions, keyPEM []byte) (*Identity, error) {
	ca, err := parseCert([]byte(rep.CA))
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	if o.CAHash != "" && caHash(ca) != strings.ToLower(o.CAHash) {
		return nil, fmt.Errorf("the control plane's CA is %s, not the %s given: is this the right control plane?", caHash(ca), o.CAHash)
	}
	cert, err := tls.X509KeyPair([]byte(rep.Certificate), keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: o.Name + nodeDomain, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	return &Identity{Name: o.Name, ControlPlane: o.ControlPlane, Addr: o.Addr, JoinedAt: time.Now().UTC(), cert: cert, pool: pool}, nil
}

// save writes the identity's files, the key last readable by its owner
// only, and the description last: a node killed midway has no identity
// and joins again.
func (id *Identity) save(dataDir string, keyPEM, certPEM, caPEM []byte) error {
	dir := IdentityDir(dataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("node identity: %w", err)
	}
	desc, _ := json.MarshalIndent(id, "", "  ")
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{keyFile, keyPEM, 0o600}, {certFile, certPEM, 0o644}, {caFile, caPEM, 0o644}, {identityFile, append(desc, '\n'), 0o644}} {
		if err := writeFileAtomic(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return fmt.Errorf("node identity: %w", err)
		}
	}
	return nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

func parseCert(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != certPEMType {
		return nil, errors.New("not a PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// StatusHandler serves the node API's status route from status.
func StatusHandler(status func(context.Context) (Status, error)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+StatusPath, func(w http.ResponseWriter, r *http.Request) {
		st, err := status(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, st)
	})
	return mux
}
