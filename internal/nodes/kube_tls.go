package nodes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// In a cluster there are two CAs, so that a node, which holds the key of
// the one that signs nodes (it issues its own serving certificate), can
// never mint the control plane's identity: the control-plane CA signs
// only the control plane's client certificate and its key stays with the
// control plane.
const (
	ControlPlaneCAName = "Airlock control-plane CA"
	ClusterNodeCAName  = "Airlock cluster node CA"
)

// ClusterCAs is what an in-cluster control plane holds: the control-plane
// CA, certificate and key (PEM), and the node CA's certificate, which the
// nodes' serving certificates chain to.
type ClusterCAs struct {
	ControlPlaneCert, ControlPlaneKey []byte
	NodeCert                          []byte
}

// NodeCAs is what an in-cluster node holds: the node CA, certificate and
// key (PEM), to issue its own serving certificate, and the control-plane
// CA's certificate, the only issuer of a caller it answers.
type NodeCAs struct {
	NodeCert, NodeKey []byte
	ControlPlaneCert  []byte
}

// NewCAPEM makes a CA named commonName: its certificate and PKCS#8 key,
// in PEM.
func NewCAPEM(commonName string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, der, err := selfSignedCA(commonName, now)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: certPEMType, Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: keyPEMType, Bytes: keyDER}), nil
}

// loadCAPEM reads a CA from PEM; keyPEM nil gives one that only verifies.
func loadCAPEM(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, errors.New("certificate is not a CA's")
	}
	if keyPEM == nil {
		return &CA{cert: cert}, nil
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil || block.Type != keyPEMType {
		return nil, errors.New("key is not a PEM \"PRIVATE KEY\"")
	}
	return loadCA(cert.Raw, block.Bytes)
}

// controlPlane makes the control plane's client identity from the
// control-plane CA; it takes any certificate from the node CA for a
// node's name (no serial is pinned: a node issues its own at each start).
func (c *ClusterCAs) controlPlane(now func() time.Time) (*CA, *controlPlane, error) {
	cpCA, err := loadCAPEM(c.ControlPlaneCert, c.ControlPlaneKey)
	if err != nil {
		return nil, nil, fmt.Errorf("control-plane CA: %w", err)
	}
	nodeCA, err := loadCAPEM(c.NodeCert, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("node CA: %w", err)
	}
	cp, err := newControlPlane(cpCA, nodeCA, now)
	if err != nil {
		return nil, nil, err
	}
	cp.anyCert = true
	return nodeCA, cp, nil
}

// ClientTLS is the control plane's TLS configuration for calling the
// node name: its client certificate, made now, and the node CA for that
// node's name only.
func (c *ClusterCAs) ClientTLS(name string, now time.Time) (*tls.Config, error) {
	_, cp, err := c.controlPlane(func() time.Time { return now })
	if err != nil {
		return nil, err
	}
	return cp.tlsConfig(Node{Name: name}), nil
}

// ClusterIdentity issues the node name its serving certificate for
// <name>.node.airlock from the node CA, with a key made now and never
// kept, and returns its identity: its ServerTLS answers only a client
// certificate from the control-plane CA.
func ClusterIdentity(cas NodeCAs, name, addr string, now time.Time) (*Identity, error) {
	if err := CheckClusterName(name); err != nil {
		return nil, err
	}
	cpCA, err := loadCAPEM(cas.ControlPlaneCert, nil)
	if err != nil {
		return nil, fmt.Errorf("control-plane CA: %w", err)
	}
	cert, err := issueClusterCert(cas, name, now)
	if err != nil {
		return nil, err
	}
	return &Identity{Name: name, Addr: addr, JoinedAt: now.UTC(), cert: cert, pool: cpCA.pool()}, nil
}

// issueClusterCert is a node's serving certificate from the node CA in
// cas, for a key made now.
func issueClusterCert(cas NodeCAs, name string, now time.Time) (tls.Certificate, error) {
	nodeCA, err := loadCAPEM(cas.NodeCert, cas.NodeKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("node CA: %w", err)
	}
	keyPEM, csrPEM, err := NewKeyAndCSR(name)
	if err != nil {
		return tls.Certificate{}, err
	}
	certPEM, _, err := nodeCA.signNode(csrPEM, name, now)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("node certificate: %w", err)
	}
	return cert, nil
}

// Reissue gives an in-cluster node a new serving certificate from the
// node CA in cas (read again from its Secret: the CA may have been
// replaced), served to new connections at once; connections made with
// the old one keep it. The control-plane CA it answers stays the one it
// started with: a new one needs the node restarted, as EnsureCAs says.
func (id *Identity) Reissue(cas NodeCAs, now time.Time) error {
	cert, err := issueClusterCert(cas, id.Name, now)
	if err != nil {
		return err
	}
	id.mu.Lock()
	id.cert = cert
	id.mu.Unlock()
	return nil
}

// RenewDue is when a certificate is renewed: once a third of its life is
// left, as the control plane renews a joined node's.
func RenewDue(cert *x509.Certificate) time.Time {
	return cert.NotAfter.Add(-cert.NotAfter.Sub(cert.NotBefore) / 3)
}

// ClusterRenewRetry is how long after a failed renewal of an in-cluster
// node's certificate the next is tried.
const ClusterRenewRetry = time.Minute

// RenewClusterCert keeps an in-cluster node's serving certificate fresh
// until ctx ends: at RenewDue it reads the CAs (load) and reissues,
// trying again every ClusterRenewRetry while that fails. A node that
// runs for longer than its certificate's year keeps answering its
// control plane. sleep waits d or until ctx ends (false).
func RenewClusterCert(ctx context.Context, id *Identity, load func(context.Context) (NodeCAs, error), now func() time.Time,
	sleep func(context.Context, time.Duration) bool, log *slog.Logger) {
	for {
		wait := RenewDue(id.current().Leaf).Sub(now())
		if !sleep(ctx, max(wait, 0)) {
			return
		}
		cas, err := load(ctx)
		if err == nil {
			err = id.Reissue(cas, now())
		}
		if err != nil {
			log.Warn("node certificate: renew", "node", id.Name, "expires", id.CertExpiresAt(), "err", err)
			if !sleep(ctx, ClusterRenewRetry) {
				return
			}
			continue
		}
		log.Info("node certificate renewed", "node", id.Name, "expires", id.CertExpiresAt())
	}
}

// TLSCertificate is the node's certificate and key.
func (id *Identity) TLSCertificate() tls.Certificate { return *id.current() }
