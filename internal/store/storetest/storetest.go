// Package storetest is the one conformance suite every store.Store (and
// nodes.Store) implementation runs: SQLite in package store/sqlite,
// PostgreSQL in package store/postgres. It checks what the interface's comments
// promise, as a caller sees it, and nothing an implementation keeps to
// itself (files, pragmas, caches). It is imported only by tests and must
// never be imported by the daemon.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// Opener opens an empty store of t's own. reopen opens the same database
// again, as a restarted daemon would; the suite calls it only after it has
// closed the store it holds. The suite closes every store it is given.
type Opener func(t *testing.T) (s store.Store, reopen func(t *testing.T) store.Store)

// Run runs the suite against stores from open, one fresh store per
// subtest, subtests in parallel.
func Run(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"RoundTrip", testRoundTrip},
		{"UpdateTenantQuota", testUpdateTenantQuota},
		{"Conflict", testConflict},
		{"NotFound", testNotFound},
		{"ConsoleSessions", testConsoleSessions},
		{"EndedSandboxLosesTokens", testEndedSandboxLosesTokens},
		{"TokenByHashIgnoresExpiry", testTokenByHashIgnoresExpiry},
		{"UpdateSandbox", testUpdateSandbox},
		{"UpdateSandboxSoon", testUpdateSandboxSoon},
		{"ListSandboxes", testListSandboxes},
		{"ListSandboxesPages", testListSandboxesPages},
		{"Usage", testUsage},
		{"Expiry", testExpiry},
		{"CountSandboxes", testCountSandboxes},
		{"ConcurrentSandboxWrites", testConcurrentSandboxWrites},
		{"Reopen", testReopen},
		{"IdleSince", testIdleSince},
		{"NetEvents", testNetEvents},
		{"SecretRoundTrip", testSecretRoundTrip},
		{"UpdateSecret", testUpdateSecret},
		{"SecretConflict", testSecretConflict},
		{"SecretNotFound", testSecretNotFound},
		{"SandboxSecretsField", testSandboxSecretsField},
		{"SecretsReopen", testSecretsReopen},
		{"Audit", testAudit},
		{"AuditOutputCapped", testAuditOutputCapped},
		{"StorageBytesFollowEveryWriter", testStorageBytes},
		{"SaveUsageMerges", testSaveUsageMerges},
		{"UsageByTenant", testUsageByTenant},
		{"TenantEvents", testTenantEvents},
		{"PruneEventsCount", testPruneEventsCount},
		{"WebhookDeliveries", testWebhookDeliveries},
		{"ListDeliveriesPages", testListDeliveriesPages},
		{"Tasks", testTasks},
		{"LiveConns", testLiveConns},
		{"Nodes", testNodes},
		{"JoinNode", testJoinNode},
		{"ConcurrentAppends", testConcurrentAppends},
		{"FollowerMissesNothing", testFollowerMissesNothing},
		{"Disks", testDisks},
		{"PausedIsLive", testPausedIsLive},
		{"Approvals", testApprovals},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, start(t, open))
		})
	}
}

// harness holds a subtest's store and can restart it.
type harness struct {
	s      store.Store
	reopen func(t *testing.T) store.Store
}

func start(t *testing.T, open Opener) *harness {
	t.Helper()
	s, reopen := open(t)
	h := &harness{s: s, reopen: reopen}
	t.Cleanup(func() {
		if err := h.s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return h
}

// restart closes the store, as a daemon stopping would, and opens the same
// database again.
func (h *harness) restart(t *testing.T) store.Store {
	t.Helper()
	if err := h.s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	h.s = h.reopen(t)
	return h.s
}

var ctx = context.Background()

// A time with nanoseconds in a non-UTC zone: a store must keep both the
// instant and its precision.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("X", 5*3600))

func fixture() (tenancy.Tenant, tenancy.Key, tenancy.Token, sandboxrec.Sandbox) {
	tn := tenancy.Tenant{ID: "ten_1", Name: "acme", MaxSandboxes: 10, MaxMemoryMB: 8192, MaxStorageMB: 512, CreatedAt: t0}
	k := tenancy.Key{ID: "key_1", TenantID: tn.ID, Name: "ci", Hash: []byte{0, 1, 2, 0xff}, Admin: true, CreatedAt: t0}
	tok := tenancy.Token{ID: "tok_1", SandboxID: "sb_1", TenantID: tn.ID, Hash: []byte("tokhash"), ExpiresAt: t0.Add(time.Hour)}
	sb := sandboxrec.Sandbox{
		ID: "sb_1", TenantID: tn.ID, State: sandboxrec.Running, Template: "python:3.12",
		CPUs: 1.5, MemoryMB: 512, Pids: 256, DiskMB: 1024,
		Env:      map[string]string{"A": "1", "QUOTE": `"'\n`},
		Metadata: map[string]string{"job": "42", "weird.key \"x\"": "v"},
		Workdir:  "/work", CreatedAt: t0, ExpiresAt: t0.Add(30 * time.Minute), Node: "local",
		Lifecycle: `{"auto_resume":true}`,
	}
	return tn, k, tok, sb
}

func seed(t *testing.T, s store.Store) (tenancy.Tenant, tenancy.Key, tenancy.Token, sandboxrec.Sandbox) {
	t.Helper()
	tn, k, tok, sb := fixture()
	for _, err := range []error{
		s.CreateTenant(ctx, tn),
		s.CreateKey(ctx, k),
		s.CreateSandbox(ctx, sb),
		s.CreateToken(ctx, tok),
	} {
		if err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	return tn, k, tok, sb
}

// must fails t on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
