package noderpc_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egresshost"
	"github.com/airlockhq/airlock/internal/noderpc"
	"github.com/airlockhq/airlock/internal/runtime"
)

type egressPutter interface {
	PutEgress(ctx context.Context, spec egresshost.Spec) (egresshost.PutReply, error)
}

// TestEgressRoutes: the egress host's calls refuse what they cannot do
// with the kind a control plane acts on: a sandbox the node does not
// hold, a bad policy or CA, a question nobody asks, a bad query; a node
// that runs no proxies answers them as routes it lacks.
func TestEgressRoutes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h, err := egresshost.New(t.TempDir(), egress.Config{Logger: slog.New(slog.DiscardHandler)}, e.rt)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewUnstartedServer(noderpc.NewServerWith(e.rt, h))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	c := noderpc.NewClient(srv.Client(), srv.URL)

	allow := egresshost.Spec{Tenant: "t", Policy: egress.Policy{Mode: egress.ModeAllowlist, Allow: []string{"example.test"}}}
	missing, err := runtime.GetLazy(ctx, c, "sb-nope")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := missing.(egressPutter).PutEgress(ctx, allow); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("put for a sandbox the node does not hold: %v, want not found", err)
	}
	sb := e.create(t, c, runtime.Spec{}).(egressPutter)
	if _, err := sb.PutEgress(ctx, egresshost.Spec{Policy: egress.Policy{Mode: "bogus"}}); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("put of a bad policy: %v, want invalid", err)
	}
	bad := allow
	bad.Secrets = &egresshost.Secrets{CACert: []byte("not a certificate")}
	if _, err := sb.PutEgress(ctx, bad); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("put of a bad CA: %v, want invalid", err)
	}
	r1, err := sb.PutEgress(ctx, allow)
	if err != nil || r1.Boot == "" {
		t.Fatalf("put: %+v %v", r1, err)
	}
	if r2, err := sb.PutEgress(ctx, allow); err != nil || r2.Boot != r1.Boot {
		t.Errorf("put again: %+v %v, want boot %s", r2, err, r1.Boot)
	}
	if err := c.AnswerEgressAsk(ctx, "nobody-asked", egresshost.Answer{Allow: true}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("answer to no question: %v, want not found", err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/node/v1/egress/events?after=x", nil)
	req.Header.Set(noderpc.ProtocolHeader, "1")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "after") {
		t.Errorf("events after=x: %s %s", resp.Status, b)
	}

	// A node without an egress host.
	plain := httptest.NewUnstartedServer(noderpc.NewServer(e.rt))
	plain.EnableHTTP2 = true
	plain.StartTLS()
	defer plain.Close()
	pc := noderpc.NewClient(plain.Client(), plain.URL)
	other, err := runtime.GetLazy(ctx, pc, "sb-nope")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.(egressPutter).PutEgress(ctx, allow); !errors.Is(err, runtime.ErrUnsupported) {
		t.Errorf("put on a node without proxies: %v, want unsupported", err)
	}
	if _, err := pc.EgressEvents(ctx, 0, 0, "", 0); !errors.Is(err, runtime.ErrUnsupported) {
		t.Errorf("events on a node without proxies: %v, want unsupported", err)
	}
}
