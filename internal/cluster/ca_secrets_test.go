package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/nodes"
)

// TestCASecrets: three control planes that start at once end up with
// one pair of CAs; the node's Secret holds the control-plane CA's
// certificate, never its key.
func TestCASecrets(t *testing.T) {
	cs, ns := kubeNamespace(t)
	ctx := context.Background()
	got := make([]*nodes.ClusterCAs, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i], errs[i] = EnsureCAs(ctx, cs, ns) })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatalf("control plane %d: %v", i, errs[i])
		}
		if diff := cmp.Diff(got[0], got[i]); diff != "" {
			t.Errorf("control planes 0 and %d hold different CAs:\n%s", i, diff)
		}
	}
	again, err := EnsureCAs(ctx, cs, ns)
	if err != nil || !cmp.Equal(again, got[0]) {
		t.Errorf("a later start: %v, different CAs %v", err, !cmp.Equal(again, got[0]))
	}
	nodeCAs, err := NodeCAs(ctx, cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	if string(nodeCAs.ControlPlaneCert) != string(got[0].ControlPlaneCert) || string(nodeCAs.NodeCert) != string(got[0].NodeCert) {
		t.Error("the node's Secret does not match the control plane's CAs")
	}
	s, err := cs.getSecret(ctx, ns, NodeCASecret)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range s.Data {
		if string(v) == string(got[0].ControlPlaneKey) {
			t.Errorf("the node's Secret holds the control-plane CA's key (as %s)", k)
		}
	}
}

// TestWaitNodeCAs: a node started before the control plane waits for its
// Secret.
func TestWaitNodeCAs(t *testing.T) {
	cs, ns := kubeNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		cas *nodes.NodeCAs
		err error
	}
	done := make(chan result, 1)
	waited := make(chan struct{}, 1)
	go func() {
		cas, err := WaitNodeCAs(ctx, cs, ns, 100*time.Millisecond, func(error) {
			select {
			case waited <- struct{}{}:
			default:
			}
		})
		done <- result{cas, err}
	}()
	<-waited
	cps, err := EnsureCAs(ctx, cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || string(r.cas.ControlPlaneCert) != string(cps.ControlPlaneCert) {
		t.Fatalf("waited for the node CA: %v", r.err)
	}
}

// TestClusterMutualTLS: the control plane takes a node's certificate for
// that node's name only, and a node answers only the control plane: not
// another node's certificate, nor a control-plane certificate a node
// minted with the node CA's key (a compromised node).
func TestClusterMutualTLS(t *testing.T) {
	cs, ns := kubeNamespace(t)
	ctx := context.Background()
	cps, err := EnsureCAs(ctx, cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	nodeCAs, err := NodeCAs(ctx, cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	id, err := nodes.ClusterIdentity(*nodeCAs, "worker-1", "", now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := nodes.ClusterIdentity(*nodeCAs, "worker-2", "", now)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	status := func(context.Context) (nodes.Status, error) {
		return nodes.Status{Name: "worker-1", Protocol: nodes.Protocol}, nil
	}
	srv := &http.Server{Handler: nodes.StatusHandler(status), TLSConfig: id.ServerTLS(), ErrorLog: nil}
	srv.ErrorLog = discardLog()
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	call := func(conf *tls.Config) error {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: conf}}
		defer c.CloseIdleConnections()
		resp, err := c.Get("https://" + ln.Addr().String() + nodes.StatusPath)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	good, err := cps.ClientTLS("worker-1", now)
	if err != nil {
		t.Fatal(err)
	}
	if err := call(good); err != nil {
		t.Errorf("the control plane calls its node: %v", err)
	}
	wrongName, _ := cps.ClientTLS("worker-2", now)
	if err := call(wrongName); err == nil {
		t.Error("the control plane took worker-1's certificate for worker-2")
	}
	// A node's certificate as a client.
	nodeClient := good.Clone()
	nodeClient.GetClientCertificate, nodeClient.Certificates = nil, []tls.Certificate{other.TLSCertificate()}
	if err := call(nodeClient); err == nil {
		t.Error("a node answered another node's certificate")
	}
	// A control-plane certificate minted with the node CA's key.
	forged := good.Clone()
	forged.GetClientCertificate, forged.Certificates = nil, []tls.Certificate{mint(t, nodeCAs.NodeCert, nodeCAs.NodeKey, "control-plane.airlock")}
	if err := call(forged); err == nil {
		t.Error("a node answered a control-plane certificate from the node CA")
	}
}

// mint issues a client certificate for name from the CA in PEM.
func mint(t *testing.T, caPEM, keyPEM []byte, name string) tls.Certificate {
	t.Helper()
	cb, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := pem.Decode(keyPEM)
	caKey, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
