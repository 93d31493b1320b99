package egress

import (
	"crypto/x509"
	"testing"
)

// The replacement for crypto/tls's own check must check as much: the
// chain, and the name.
func TestVerifyUpstream(t *testing.T) {
	cert, roots := mitmUpstreamCert(t)
	leaf := []*x509.Certificate{cert.Leaf}
	for _, tt := range []struct {
		name  string
		certs []*x509.Certificate
		host  string
		roots *x509.CertPool
		ok    bool
	}{
		{"valid", leaf, mitmBound, roots, true},
		{"other name in the certificate", leaf, mitmOther, roots, true},
		{"name not in the certificate", leaf, "evil.test", roots, false},
		{"unknown CA", leaf, mitmBound, x509.NewCertPool(), false},
		{"no certificate", nil, mitmBound, roots, false},
	} {
		if err := verifyUpstream(tt.certs, tt.host, tt.roots); (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}
