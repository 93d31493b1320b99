package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNewCA(t *testing.T) {
	before := time.Now().Truncate(time.Second)
	ca, err := NewCA("sb-1")
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(ca.CertPEM())
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	type posture struct {
		CN                     string
		IsCA, PathLenZero      bool
		MaxPathLen             int
		KeyUsage               x509.KeyUsage
		Curve                  string
		Lifetime               time.Duration
		BackdatedAtLeastAnHour bool
	}
	pub, _ := cert.PublicKey.(*ecdsa.PublicKey)
	got := posture{cert.Subject.CommonName, cert.IsCA, cert.MaxPathLenZero, cert.MaxPathLen, cert.KeyUsage,
		pub.Curve.Params().Name, cert.NotAfter.Sub(cert.NotBefore), !cert.NotBefore.After(before.Add(-time.Hour))}
	want := posture{"Airlock sandbox sb-1 CA", true, true, 0, x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		"P-256", 7*24*time.Hour + time.Hour, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CA certificate (-want +got):\n%s", diff)
	}
	if !ca.NotAfter().Equal(cert.NotAfter) {
		t.Errorf("NotAfter = %v, want %v", ca.NotAfter(), cert.NotAfter)
	}
}

func TestLoadCA(t *testing.T) {
	ca, err := NewCA("sb-1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("sb-2")
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadCA(ca.CertPEM(), ca.KeyPKCS8())
	if err != nil {
		t.Fatal(err)
	}
	// A leaf from the restored CA verifies under the original certificate,
	// as the sandbox's trust store holds it.
	leaf, err := loaded.leaf("api.example.com", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	verifyLeaf(t, ca, leaf, "api.example.com", time.Now())

	leafPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Certificate[0]})
	leafKey, err := x509.MarshalPKCS8PrivateKey(leaf.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		cert, key []byte
		want      string
	}{
		{"garbage PEM", []byte("nope"), ca.KeyPKCS8(), "no PEM certificate"},
		{"garbage key", ca.CertPEM(), []byte("nope"), "key"},
		{"another CA's key", ca.CertPEM(), other.KeyPKCS8(), "does not match"},
		{"a leaf", leafPEM, leafKey, "not a CA"},
	} {
		if _, err := LoadCA(tt.cert, tt.key); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// A CA past its NotAfter is refused with ErrCAExpired, so that the caller
// makes a new one instead of failing the sandbox.
func TestLoadCAExpired(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: randSerial(), NotBefore: time.Now().Add(-48 * time.Hour),
		NotAfter: time.Now().Add(-time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	_, err = LoadCA(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyDER)
	if !errors.Is(err, ErrCAExpired) {
		t.Errorf("err = %v, want ErrCAExpired", err)
	}
}

func verifyLeaf(t *testing.T, ca *CA, leaf *tls.Certificate, host string, now time.Time) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now}); err != nil {
		t.Errorf("leaf for %s does not verify: %v", host, err)
	}
}

func TestLeaf(t *testing.T) {
	ca, err := NewCA("sb-1")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	l1, err := ca.leaf("api.example.com", now)
	if err != nil {
		t.Fatal(err)
	}
	verifyLeaf(t, ca, l1, "api.example.com", now)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	if _, err := l1.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "evil.example.com", CurrentTime: now}); err == nil {
		t.Error("leaf for api.example.com verifies for evil.example.com")
	}
	pub, _ := l1.Leaf.PublicKey.(*ecdsa.PublicKey)
	got := []any{l1.Leaf.DNSNames, l1.Leaf.NotAfter.Sub(now.Truncate(time.Second)) /* certificates keep whole seconds */, pub != nil && pub.Curve == elliptic.P256(), l1.Leaf.IsCA}
	if diff := cmp.Diff([]any{[]string{"api.example.com"}, time.Hour, true, false}, got); diff != "" {
		t.Errorf("leaf (-want +got):\n%s", diff)
	}
	l2, _ := ca.leaf("api.example.com", now.Add(49*time.Minute))
	l3, _ := ca.leaf("api.example.com", now.Add(51*time.Minute)) // under 10 minutes left
	if l2 != l1 || l3 == l1 {
		t.Errorf("cache: reused at 49 min = %v (want true), at 51 min = %v (want false)", l2 == l1, l3 == l1)
	}
	// Never outlives the CA.
	late := ca.NotAfter().Add(-30 * time.Minute)
	l4, _ := ca.leaf("late.example.com", late)
	if !l4.Leaf.NotAfter.Equal(ca.NotAfter()) {
		t.Errorf("leaf minted 30 min before the CA expires ends %v, want %v", l4.Leaf.NotAfter, ca.NotAfter())
	}
}

func TestLeafCacheBounded(t *testing.T) {
	ca, err := NewCA("sb-1")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range maxLeaves {
		ca.leaves[strings.Repeat("x", i+1)] = &tls.Certificate{Leaf: &x509.Certificate{NotAfter: now.Add(time.Hour)}}
	}
	if _, err := ca.leaf("new.example.com", now); err != nil {
		t.Fatal(err)
	}
	if n := len(ca.leaves); n > maxLeaves {
		t.Errorf("%d leaves cached, want at most %d", n, maxLeaves)
	}
	if _, ok := ca.leaves["new.example.com"]; !ok {
		t.Error("the new leaf was not cached")
	}
}
