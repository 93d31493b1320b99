package api

import "testing"

func TestSessionRoutes(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	base := "/v1/sandboxes/" + id + "/sessions"
	var ses struct{ ID string }
	e.must(call{method: "POST", path: base, cred: e.alice, body: `{"cols":80,"rows":24}`}, 201, &ses)
	e.must(call{method: "POST", path: base, cred: e.alice}, 201, nil) // no body: defaults
	var res struct {
		Output string
	}
	e.must(call{method: "POST", path: base + "/" + ses.ID + "/exec", cred: e.alice, body: `{"command":"pwd"}`}, 200, &res)
	if res.Output != "pwd\n" {
		t.Errorf("exec: %+v", res)
	}
	for _, body := range []string{`{}`, `{"command":""}`, `{"command":"x","timeout_s":-1}`, `{"command":"x","extra":1}`} {
		e.must(call{method: "POST", path: base + "/" + ses.ID + "/exec", cred: e.alice, body: body}, 400, nil)
	}
	e.must(call{method: "POST", path: base, cred: e.alice, body: `{"shell":"bash","bogus":1}`}, 400, nil)
	e.must(call{method: "GET", path: base, cred: e.bob}, 404, nil)
	e.must(call{method: "POST", path: base + "/" + ses.ID + "/exec", cred: e.bob, body: `{"command":"id"}`}, 404, nil)
	e.must(call{method: "DELETE", path: base + "/" + ses.ID, cred: e.alice}, 204, nil)
	e.must(call{method: "DELETE", path: base + "/ses-nope", cred: e.alice}, 404, nil)
}
