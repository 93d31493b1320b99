package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/store"
)

func nodeStore(t *testing.T, s store.Store) nodes.Store {
	t.Helper()
	ns, ok := s.(nodes.Store)
	if !ok {
		t.Fatalf("%T does not implement nodes.Store", s)
	}
	return ns
}

// nodeOpts compares nodes by what a store keeps: the package's own
// unexported fields are not stored.
var nodeOpts = cmpopts.IgnoreUnexported(nodes.Node{})

func testNodes(t *testing.T, h *harness) {
	ns := nodeStore(t, h.s)
	if _, _, err := ns.NodeCA(ctx); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("CA before the first: %v, want ErrNotFound", err)
	}
	cert, key, err := ns.PutNodeCA(ctx, []byte("cert-1"), []byte("key-1"))
	if err != nil || string(cert) != "cert-1" || string(key) != "key-1" {
		t.Fatalf("first PutNodeCA: %q %q %v", cert, key, err)
	}
	// Another control plane's CA loses: the stored one is returned.
	cert, key, err = ns.PutNodeCA(ctx, []byte("cert-2"), []byte("key-2"))
	if err != nil || string(cert) != "cert-1" || string(key) != "key-1" {
		t.Errorf("second PutNodeCA: %q %q %v", cert, key, err)
	}

	tok := nodes.JoinToken{ID: "jt_1", Hash: []byte("h"), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	must(t, ns.CreateJoinToken(ctx, tok))
	got, err := ns.JoinToken(ctx, tok.ID)
	must(t, err)
	if d := cmp.Diff(tok, got); d != "" {
		t.Errorf("join token (-want +got):\n%s", d)
	}
	if _, err := ns.JoinToken(ctx, "jt_none"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("missing token: %v", err)
	}
	if l, err := ns.ListNodes(ctx); err != nil || len(l) != 0 {
		t.Errorf("no nodes yet: %v, %v", l, err)
	}

	n := nodes.Node{Name: "node-b", Addr: "10.0.0.2:7443", CertSerial: "s1", CertExpiresAt: t0.Add(24 * time.Hour), JoinedAt: t0}
	must(t, ns.JoinNode(ctx, n, tok.ID, t0.Add(time.Minute)))
	used, _ := ns.JoinToken(ctx, tok.ID)
	if used.UsedAt == nil || !used.UsedAt.Equal(t0.Add(time.Minute)) || used.UsedBy != n.Name {
		t.Errorf("spent token: %+v", used)
	}
	gotN, err := ns.GetNode(ctx, n.Name)
	must(t, err)
	if d := cmp.Diff(n, gotN, nodeOpts); d != "" {
		t.Errorf("joined node (-want +got):\n%s", d)
	}

	st := nodes.Status{Name: n.Name, Version: "v1.2.3", Capacity: nodes.Capacity{CPUs: 8, MemoryMB: 16384, DiskMB: 100000, Sandboxes: 50},
		Use: nodes.Use{CPUs: 1.25, MemoryMB: 2048, DiskMB: 10, Sandboxes: 3}}
	beat := t0.Add(2 * time.Minute)
	must(t, ns.UpdateNodeStatus(ctx, n.Name, st, beat))
	must(t, ns.SetNodeDrained(ctx, n.Name, true))
	renewed := t0.Add(400 * 24 * time.Hour)
	must(t, ns.SetNodeCert(ctx, n.Name, "renewed-serial", renewed))
	n.Version, n.Capacity, n.Use, n.LastHeartbeat, n.Drained = st.Version, st.Capacity, st.Use, &beat, true
	n.CertSerial, n.CertExpiresAt = "renewed-serial", renewed
	gotN, err = ns.GetNode(ctx, n.Name)
	must(t, err)
	if d := cmp.Diff(n, gotN, nodeOpts); d != "" {
		t.Errorf("after a heartbeat, a drain and a renewed certificate (-want +got):\n%s", d)
	}

	tok2 := nodes.JoinToken{ID: "jt_2", Hash: []byte("h2"), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	must(t, ns.CreateJoinToken(ctx, tok2))
	a := nodes.Node{Name: "node-a", Addr: "10.0.0.1:7443", CertSerial: "s2", CertExpiresAt: t0, JoinedAt: t0}
	must(t, ns.JoinNode(ctx, a, tok2.ID, t0))
	list, err := ns.ListNodes(ctx)
	must(t, err)
	if len(list) != 2 || list[0].Name != "node-a" || list[1].Name != "node-b" {
		t.Errorf("nodes by name: %+v", list)
	}

	for name, err := range map[string]error{
		"UpdateNodeStatus": ns.UpdateNodeStatus(ctx, "nope", st, beat),
		"SetNodeDrained":   ns.SetNodeDrained(ctx, "nope", false),
		"SetNodeCert":      ns.SetNodeCert(ctx, "nope", "s", t0),
		"DeleteNode":       ns.DeleteNode(ctx, "nope"),
	} {
		if !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("%s of a missing node: %v, want ErrNotFound", name, err)
		}
	}
	must(t, ns.DeleteNode(ctx, "node-b"))
	if _, err := ns.GetNode(ctx, "node-b"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("deleted node: %v", err)
	}
	ns = nodeStore(t, h.restart(t)) // the CA and nodes are durable
	if cert, _, err := ns.NodeCA(ctx); err != nil || string(cert) != "cert-1" {
		t.Errorf("CA after reopening: %q, %v", cert, err)
	}
	if list, _ := ns.ListNodes(ctx); len(list) != 1 {
		t.Errorf("nodes after reopening: %+v", list)
	}
}

// testJoinNode: a token is spent once, only before it expires, and a name
// joins once.
func testJoinNode(t *testing.T, h *harness) {
	ns := nodeStore(t, h.s)
	for _, id := range []string{"jt_1", "jt_2", "jt_3"} {
		must(t, ns.CreateJoinToken(ctx, nodes.JoinToken{ID: id, Hash: []byte(id), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}))
	}
	n := nodes.Node{Name: "n1", Addr: "x", CertSerial: "s", CertExpiresAt: t0, JoinedAt: t0}
	must(t, ns.JoinNode(ctx, n, "jt_1", t0))
	n2 := n
	n2.Name = "n2"
	if err := ns.JoinNode(ctx, n2, "jt_1", t0); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a spent token: %v, want ErrNotFound", err)
	}
	if err := ns.JoinNode(ctx, n2, "jt_2", t0.Add(time.Hour)); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("an expired token: %v, want ErrNotFound", err)
	}
	if err := ns.JoinNode(ctx, n2, "jt_none", t0); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a missing token: %v, want ErrNotFound", err)
	}
	if err := ns.JoinNode(ctx, n, "jt_3", t0); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("a name taken: %v, want ErrConflict", err)
	}
	// The refused join did not spend its token.
	if tok, _ := ns.JoinToken(ctx, "jt_3"); tok.UsedAt != nil {
		t.Errorf("a refused join spent its token: %+v", tok)
	}
	must(t, ns.JoinNode(ctx, n2, "jt_3", t0))
}
