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

	cert tls.Certificate
	pool *x509.CertPool
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
	if id.cert, err = tls.LoadX509KeyPair(filepath.Join(dir, certFile), filepath.Join(dir, keyFile)); err != nil {
		return nil, fmt.Errorf("node identity: %w", err)
	}
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

// CertExpiresAt is when the node's certificate ends.
func (id *Identity) CertExpiresAt() time.Time { return id.cert.Leaf.NotAfter }

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
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
	})
	return mux
}
