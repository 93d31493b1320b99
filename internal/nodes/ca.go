package nodes

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// The names certificates carry. A node's certificate is a server
// certificate for <name>.node.airlock, which the control plane asks for by
// that name when it calls the node; the control plane's is a client
// certificate for control-plane.airlock, the only peer a node answers.
// Neither name is ever resolved.
const (
	nodeDomain       = ".node.airlock"
	controlPlaneName = "control-plane.airlock"
)

// Lifetimes: the CA outlives every node; a node's certificate lasts a year
// (it is renewed by joining again); the control plane's own is made at
// each start.
const (
	caLifetime    = 20 * 365 * 24 * time.Hour
	nodeLifetime  = 365 * 24 * time.Hour
	cpLifetime    = 30 * 24 * time.Hour
	clockSkew     = 5 * time.Minute
	caCommonName  = "Airlock node CA"
	caKeyAD       = "\x00node-ca"
	certPEMType   = "CERTIFICATE"
	keyPEMType    = "PRIVATE KEY"
	csrPEMType    = "CERTIFICATE REQUEST"
	caHashPrefix  = "sha256:"
	maxNodeName   = 63
	maxPEMRequest = 16 << 10
)

// CA is the control plane's certificate authority for nodes: it signs each
// node's certificate at join and the control plane's client certificate.
// Its key is kept sealed under the master key (CAStore).
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// newCA makes a CA: a P-256 key and a self-signed certificate.
func newCA(now time.Time) (*CA, []byte, error) {
	key, der, err := selfSignedCA(caCommonName, now)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return &CA{cert: cert, key: key}, der, nil
}

// selfSignedCA makes a P-256 key and a CA certificate named commonName
// that it signs itself (DER), good for caLifetime.
func selfSignedCA(commonName string, now time.Time) (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	return key, der, err
}

// loadCA rebuilds a CA from its certificate and PKCS#8 key.
func loadCA(certDER, keyDER []byte) (*CA, error) {
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return nil, fmt.Errorf("node CA certificate: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(keyDER)
	if err != nil {
		return nil, fmt.Errorf("node CA key: %w", err)
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("node CA key cannot sign")
	}
	return &CA{cert: cert, key: key}, nil
}

// PEM is the CA certificate, as nodes keep it.
func (ca *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certPEMType, Bytes: ca.cert.Raw})
}

// Hash is the CA's pin, "sha256:<hex of its certificate's public key>": a
// joining node given it trusts no other CA, as kubeadm's discovery hash.
func (ca *CA) Hash() string { return caHash(ca.cert) }

func caHash(c *x509.Certificate) string {
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return caHashPrefix + hex.EncodeToString(sum[:])
}

// pool is a cert pool holding only the CA.
func (ca *CA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// signNode checks a node's certificate request and signs it: a server
// certificate for name, for the request's key.
func (ca *CA) signNode(csrPEM []byte, name string, now time.Time) ([]byte, *x509.Certificate, error) {
	csr, err := parseCSR(csrPEM)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, OrganizationalUnit: []string{"airlock node"}},
		DNSNames:     []string{name + nodeDomain},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(nodeLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, csr.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign node certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: certPEMType, Bytes: der}), cert, nil
}

// parseCSR reads one PEM certificate request and checks its signature and
// key (P-256, P-384 or Ed25519 are taken; RSA below 2048 bits is not).
func parseCSR(csrPEM []byte) (*x509.CertificateRequest, error) {
	if len(csrPEM) > maxPEMRequest {
		return nil, invalid("csr", "is larger than %d bytes", maxPEMRequest)
	}
	block, _ := pem.Decode(csrPEM)
	if block == nil || block.Type != csrPEMType {
		return nil, invalid("csr", "is not a PEM %q block", csrPEMType)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, invalid("csr", "%v", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, invalid("csr", "signature: %v", err)
	}
	switch k := csr.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return nil, invalid("csr", "ECDSA key on %s: want P-256 or P-384", k.Curve.Params().Name)
		}
	default:
		if csr.PublicKeyAlgorithm != x509.Ed25519 && csr.PublicKeyAlgorithm != x509.RSA {
			return nil, invalid("csr", "key algorithm %v is not supported", csr.PublicKeyAlgorithm)
		}
		if rk, ok := csr.PublicKey.(interface{ Size() int }); ok && csr.PublicKeyAlgorithm == x509.RSA && rk.Size() < 256 {
			return nil, invalid("csr", "RSA key of %d bits: want at least 2048", rk.Size()*8)
		}
	}
	return csr, nil
}

// controlPlaneCert makes the control plane's client certificate, the one
// identity nodes answer.
func (ca *CA) controlPlaneCert(now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: controlPlaneName, OrganizationalUnit: []string{"airlock control plane"}},
		DNSNames:     []string{controlPlaneName},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(cpLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// serial is a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n.Add(n, big.NewInt(1))
}

// serialHex is how a certificate's serial is kept and compared.
func serialHex(c *x509.Certificate) string { return strings.ToLower(c.SerialNumber.Text(16)) }

// NewKeyAndCSR makes a node's P-256 key (PKCS#8 PEM) and a certificate
// request for it.
func NewKeyAndCSR(name string) (keyPEM, csrPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name}}, key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: keyPEMType, Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: csrPEMType, Bytes: csr}), nil
}
