package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"testing"

	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/store/teststore"
)

// TestNodeRoutes: the node registry's routes, for admin keys only, and
// their bad input: each a 4xx naming what is wrong, changing nothing (a
// join refused for its request leaves the token unspent).
func TestNodeRoutes(t *testing.T) {
	// Without a registry, the routes say so.
	plain := newEnv(t)
	if code, _ := plain.must(call{method: "GET", path: "/v1/nodes", cred: plain.admin}, 503, nil).errCode(); code != codeUnavailable {
		t.Errorf("nodes without a registry: %s", code)
	}

	st := teststore.Open(t).(nodes.Store)
	key := make([]byte, secrets.KeySize)
	rand.Read(key)
	box, err := secrets.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := nodes.New(context.Background(), st, box, nodes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	e := newEnvWith(t, Options{Nodes: svc})

	for _, c := range []struct {
		call call
		want int
		code string
	}{
		{call{method: "GET", path: "/v1/nodes", cred: e.alice}, 403, codeForbidden},
		{call{method: "POST", path: "/v1/nodes/tokens", cred: e.alice, body: `{}`}, 403, codeForbidden},
		{call{method: "POST", path: "/v1/nodes/tokens", cred: e.admin, body: `{"ttl_s":5}`}, 400, codeInvalid},
		{call{method: "POST", path: "/v1/nodes/tokens", cred: e.admin, body: `{"ttl_s":-1}`}, 400, codeInvalid},
		{call{method: "POST", path: "/v1/nodes/tokens", cred: e.admin, body: `{"ttl":60}`}, 400, codeInvalid},
		{call{method: "POST", path: "/v1/nodes/join", body: `{}`}, 401, codeUnauthenticated},
		{call{method: "POST", path: "/v1/nodes/join", body: `{"token":"alj_00.x"}`}, 401, codeUnauthenticated},
		{call{method: "POST", path: "/v1/nodes/join", body: `{"token":1}`}, 400, codeInvalid},
		{call{method: "GET", path: "/v1/nodes/Not_A_Name", cred: e.admin}, 400, codeInvalid},
		{call{method: "GET", path: "/v1/nodes/nope", cred: e.admin}, 404, codeNotFound},
		{call{method: "POST", path: "/v1/nodes/nope/drain", cred: e.admin}, 404, codeNotFound},
		{call{method: "DELETE", path: "/v1/nodes/nope", cred: e.admin}, 404, codeNotFound},
		{call{method: "DELETE", path: "/v1/nodes/nope?force=maybe", cred: e.admin}, 400, codeInvalid},
		{call{method: "DELETE", path: "/v1/nodes/nope?hard=1", cred: e.admin}, 400, codeInvalid},
	} {
		if code, msg := e.must(c.call, c.want, nil).errCode(); code != c.code {
			t.Errorf("%s %s %s: %s %q, want %s", c.call.method, c.call.path, c.call.body, code, msg, c.code)
		}
	}

	var tok nodes.TokenReply
	e.must(call{method: "POST", path: "/v1/nodes/tokens", cred: e.admin}, 201, &tok)
	_, csr, err := nodes.NewKeyAndCSR("n1")
	if err != nil {
		t.Fatal(err)
	}
	join := func(name, addr, csr string) string {
		b, _ := json.Marshal(nodes.JoinRequest{Token: tok.Token, Name: name, Addr: addr, CSR: csr})
		return string(b)
	}
	// Refused for its request: 400, the token kept.
	for _, body := range []string{join("N1", "127.0.0.1:7071", string(csr)), join("n1", "nowhere", string(csr)), join("n1", "127.0.0.1:7071", "junk")} {
		if code, msg := e.must(call{method: "POST", path: "/v1/nodes/join", body: body}, 400, nil).errCode(); code != codeInvalid {
			t.Errorf("join %s: %s %q", body, code, msg)
		}
	}
	var rep nodes.JoinReply
	e.must(call{method: "POST", path: "/v1/nodes/join", body: join("n1", "127.0.0.1:7071", string(csr))}, 201, &rep)
	if rep.Name != "n1" || rep.Certificate == "" || rep.CA == "" {
		t.Errorf("join answered %+v", rep)
	}
	if _, msg := e.must(call{method: "POST", path: "/v1/nodes/join", body: join("n2", "127.0.0.1:7072", string(csr))}, 401, nil).errCode(); msg == "" {
		t.Error("a spent token refused without a word")
	}
	var list struct {
		Nodes []nodes.Node `json:"nodes"`
	}
	e.must(call{method: "GET", path: "/v1/nodes", cred: e.admin}, 200, &list)
	if len(list.Nodes) != 1 || list.Nodes[0].Name != "n1" || list.Nodes[0].Addr != "127.0.0.1:7071" {
		t.Errorf("nodes %+v", list.Nodes)
	}
	var n nodes.Node
	e.must(call{method: "POST", path: "/v1/nodes/n1/drain", cred: e.admin}, 200, &n)
	if n.Name != "n1" || n.State != nodes.StateJoining {
		t.Errorf("drained node, never heard from: %+v", n)
	}
	e.must(call{method: "DELETE", path: "/v1/nodes/n1", cred: e.admin}, 204, nil)
	e.must(call{method: "GET", path: "/v1/nodes/n1", cred: e.admin}, 404, nil)

}
