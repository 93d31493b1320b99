package egress

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// CA is a sandbox's own certificate authority, with which the proxy
// intercepts TLS to the hosts a secret is bound to. Its key never enters
// the sandbox; its certificate goes into the sandbox's trust store. One CA
// per sandbox, short-lived, so a sandbox that learns how to abuse its own
// CA (it cannot: it has no key) could not use it against another sandbox,
// and a leaked key stops mattering within days.
type CA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyDER  []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate // by host name
}

const (
	caLifetime   = 7 * 24 * time.Hour
	caBackdate   = time.Hour // tolerates a sandbox clock somewhat behind
	leafLife     = time.Hour
	leafRenew    = 10 * time.Minute // re-minted when less than this is left
	leafBackdate = 5 * time.Minute
	maxLeaves    = 1024 // a wildcard binding may mint for many names
)

// ErrCAExpired is wrapped by LoadCA for a CA past its NotAfter: make a new
// one (NewCA) and put its certificate in the sandbox's trust store.
var ErrCAExpired = errors.New("sandbox ca expired")

// NewCA makes a CA for sandbox id: ECDSA P-256, valid 7 days from an hour
// ago, allowed to sign leaf certificates only (path length 0).
func NewCA(sandboxID string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate sandbox ca key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          randSerial(),
		Subject:               pkix.Name{CommonName: "Airlock sandbox " + sandboxID + " CA"},
		NotBefore:             now.Add(-caBackdate),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create sandbox ca certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal sandbox ca key: %w", err)
	}
	return LoadCA(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyDER)
}

// LoadCA restores a CA from its certificate (PEM) and key (PKCS #8 DER),
// as CertPEM and KeyPKCS8 returned them. It refuses a certificate that is
// not a CA, has expired, or does not belong to the key.
func LoadCA(certPEM, keyPKCS8 []byte) (*CA, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("load sandbox ca: no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("load sandbox ca: %w", err)
	}
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return nil, errors.New("load sandbox ca: certificate is not a CA")
	}
	if time.Now().After(cert.NotAfter) {
		return nil, fmt.Errorf("load sandbox ca: %w at %s", ErrCAExpired, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	k, err := x509.ParsePKCS8PrivateKey(keyPKCS8)
	if err != nil {
		return nil, fmt.Errorf("load sandbox ca key: %w", err)
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("load sandbox ca key: %T cannot sign", k)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, errors.New("load sandbox ca: key does not match the certificate")
	}
	return &CA{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}),
		keyDER:  append([]byte(nil), keyPKCS8...),
		leaves:  map[string]*tls.Certificate{},
	}, nil
}

// CertPEM returns the CA certificate, PEM-encoded, for the sandbox's trust
// store.
func (c *CA) CertPEM() []byte { return append([]byte(nil), c.certPEM...) }

// KeyPKCS8 returns the CA's private key, PKCS #8 DER. It must never reach
// the sandbox: whoever holds it can read every intercepted request.
func (c *CA) KeyPKCS8() []byte { return append([]byte(nil), c.keyDER...) }

// NotAfter is when the CA expires; make a new one before then.
func (c *CA) NotAfter() time.Time { return c.cert.NotAfter }

// leaf returns a server certificate for host signed by the CA, minted on
// first use and again when less than leafRenew of it is left.
func (c *CA) leaf(host string, now time.Time) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.leaves[host]; ok && l.Leaf.NotAfter.Sub(now) >= leafRenew {
		return l, nil
	}
	l, err := c.mint(host, now)
	if err != nil {
		return nil, err
	}
	if len(c.leaves) >= maxLeaves {
		c.evict(now)
	}
	c.leaves[host] = l
	return l, nil
}

// evict drops leaves due for renewal and, if none are, an arbitrary one.
func (c *CA) evict(now time.Time) {
	for h, l := range c.leaves {
		if l.Leaf.NotAfter.Sub(now) < leafRenew {
			delete(c.leaves, h)
		}
	}
	for h := range c.leaves {
		if len(c.leaves) < maxLeaves {
			break
		}
		delete(c.leaves, h)
	}
}

func (c *CA) mint(host string, now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("mint certificate for %s: %w", host, err)
	}
	notAfter := now.Add(leafLife)
	if notAfter.After(c.cert.NotAfter) {
		notAfter = c.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: randSerial(),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-leafBackdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, fmt.Errorf("mint certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("mint certificate for %s: %w", host, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

func randSerial() *big.Int {
	// 128 random bits, as CAs must have enough entropy in serials; a
	// failing system RNG has already failed key generation.
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	return n
}
