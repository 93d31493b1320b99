package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/metrics"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/store/postgres"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// databaseURLEnv is --store's default.
const databaseURLEnv = "AIRLOCK_DATABASE_URL"

// replicaConfig is what serve's flags say to a control-plane replica.
type replicaConfig struct {
	addr, advertise string
	storeURL        string
	dataDir         string
	pool            int
	eg              *egress.Config
	tune            daemonTuning
	kube            *kubeConfig
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// serveReplica runs serve as one control-plane replica on a shared
// PostgreSQL (replica.go) until ctx ends.
func serveReplica(ctx context.Context, c replicaConfig) error {
	if !c.tune.noLocalNode {
		fmt.Fprintln(os.Stderr, "airlock serve: --store postgres runs a control-plane replica, which holds no sandbox of its own (another replica may lead next): add --no-local-node and run airlock node on the hosts")
		return exitError(2)
	}
	if os.Getenv(secrets.MasterKeyEnv) == "" {
		fmt.Fprintf(os.Stderr, "airlock serve: --store postgres: every replica must seal and open secrets with the same master key: set $%s (32 bytes, hex or base64) on each\n", secrets.MasterKeyEnv)
		return exitError(2)
	}
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	self, err := advertiseURL(c.advertise, ln.Addr())
	if err != nil {
		fmt.Fprintf(os.Stderr, "airlock serve: %v\n", err)
		return exitError(2)
	}
	if err := os.MkdirAll(c.dataDir, 0o711); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	st, err := postgres.Open(ctx, c.storeURL)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer st.Close()
	box, err := secrets.LoadBox(c.dataDir)
	if err != nil {
		return fmt.Errorf("master key: %w", err)
	}
	signer := box.Signer()
	el, how, err := c.elector(ctx, signIdentity(signer, self))
	if err != nil {
		return err
	}
	rp := &replica{self: self, el: el, pub: signer.Public().(ed25519.PublicKey), watch: 200 * time.Millisecond, e2bDomain: c.tune.e2bDomain, start: func(ctx context.Context) (*leaderTerm, error) {
		t := c.tune
		t.store = st
		t.kube = c.kube
		d, err := startDaemon(ctx, c.dataDir, c.pool, c.eg, nil, t)
		if err != nil {
			return nil, err
		}
		d.sayAdminKey()
		h, _, end := d.serving(ln.Addr())
		return &leaderTerm{handler: h, metrics: d.metrics, end: func() {
			end()
			d.shutdown()
		}}, nil
	}}
	rp.metrics = metrics.NewReplica(rp.leading, nil)
	rp.auth = tenancy.New(st, tenancy.Options{NoKeyCache: true}).Authenticate
	runCtx, stopRun := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		rp.run(runCtx)
	}()
	defer func() {
		stopRun()
		<-ran
	}()
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	// Streams end with the leader's term; the term ends as ctx does.
	srv.RegisterOnShutdown(stopRun)
	fmt.Printf("airlock: serving on http://%s as a control-plane replica (%s; advertised as %s)\n", ln.Addr(), how, self)
	return serveUntil(ctx, srv, func() error { return srv.Serve(ln) }, "airlock: shutting down", 10*time.Second)
}

// advertiseURL is --advertise-url, checked, or else the URL of the
// address serve listens on when that is a specific host.
func advertiseURL(flagValue string, addr net.Addr) (string, error) {
	if flagValue == "" {
		tcp, ok := addr.(*net.TCPAddr)
		if !ok || tcp.IP.IsUnspecified() {
			return "", fmt.Errorf("--advertise-url: the other replicas must know how to reach this one: give http://HOST:PORT (--addr %s listens on every address)", addr)
		}
		return "http://" + addr.String(), nil
	}
	u, err := url.Parse(flagValue)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", fmt.Errorf("--advertise-url %q: want http(s)://HOST:PORT", flagValue)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}
