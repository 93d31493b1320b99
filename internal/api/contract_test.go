package api

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airlockhq/airlock/client/clienttest/contract"
)

// newServer serves h on loopback until t ends, failing t with every
// answer that openapi.json does not describe (client/clienttest/contract):
// the document's schemas, not only its routes, are checked by every test
// that calls the API.
func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(CheckedHandler(t, h))
	t.Cleanup(srv.Close)
	return srv
}

// CheckedHandler is h checked against openapi.json (parsed once per test
// binary); the api_test package's servers use it too.
func CheckedHandler(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	d, err := contract.Parse(openAPIDoc)
	if err != nil {
		t.Fatal(err)
	}
	return d.Handler(t, h)
}

// TestCheckedHandlerCatchesDrift: a field the code sends and the document
// does not list fails the test that provokes it; so does one it lists as
// required and the code leaves out.
func TestCheckedHandlerCatchesDrift(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	a := e.must(call{method: "GET", path: "/v1/sandboxes/" + id, cred: e.alice}, 200, nil)
	var sb map[string]any
	if err := json.Unmarshal(a.body, &sb); err != nil {
		t.Fatal(err)
	}
	d, err := contract.Parse(openAPIDoc)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/v1/sandboxes/"+id, nil)
	if err := d.Check(r, 200, a.header, a.body); err != nil {
		t.Fatalf("the answer as sent: %v", err)
	}
	added := maps.Clone(sb)
	added["surprise"] = 1
	removed := maps.Clone(sb)
	delete(removed, "limits")
	for name, v := range map[string]map[string]any{"a field added": added, "a field removed": removed} {
		b, _ := json.Marshal(v)
		if err := d.Check(r, 200, a.header, b); err == nil {
			t.Errorf("%s: passes the check", name)
		}
	}
}
