package api

import "testing"

func TestTemplates(t *testing.T) {
	e := newEnv(t)
	type tmpl struct {
		Name, Description, From string
		Labels                  map[string]string
	}
	var out struct{ Templates []tmpl }
	e.must(call{method: "GET", path: "/v1/templates", cred: e.alice}, 200, &out)
	if len(out.Templates) != 1 || out.Templates[0].Name != "base" || out.Templates[0].Description == "" {
		t.Fatalf("templates %+v, want base with a description", out.Templates)
	}
	var sb struct{ ID string }
	e.must(call{method: "POST", path: "/v1/sandboxes", cred: e.admin, body: `{"build":true}`}, 201, &sb)
	aliceSB := e.sandbox(e.alice)
	body := `{"name":"harness-x","sandbox_id":"` + sb.ID + `","labels":{"recipe":"abc"}}`
	// Only an admin saves or deletes templates, and only from its own sandbox.
	e.must(call{method: "POST", path: "/v1/templates", cred: e.alice, body: `{"name":"harness-x","sandbox_id":"` + aliceSB + `"}`}, 403, nil)
	e.must(call{method: "POST", path: "/v1/templates", cred: e.admin, body: `{"name":"harness-x","sandbox_id":"` + aliceSB + `"}`}, 404, nil)
	e.must(call{method: "POST", path: "/v1/templates", cred: e.admin, body: `{"name":"harness-x","sandbox_id":"` + sb.ID + `","bogus":1}`}, 400, nil)
	var got tmpl
	e.must(call{method: "POST", path: "/v1/templates", cred: e.admin, body: body}, 201, &got)
	if got.Name != "harness-x" || got.Labels["recipe"] != "abc" {
		t.Errorf("committed %+v", got)
	}
	e.must(call{method: "GET", path: "/v1/templates/harness-x", cred: e.alice}, 200, &got)
	e.must(call{method: "GET", path: "/v1/templates", cred: e.alice}, 200, &out)
	if len(out.Templates) != 2 || out.Templates[1].Name != "harness-x" {
		t.Errorf("templates %+v", out.Templates)
	}
	e.must(call{method: "DELETE", path: "/v1/templates/harness-x", cred: e.alice}, 403, nil)
	e.must(call{method: "DELETE", path: "/v1/templates/harness-x", cred: e.admin}, 204, nil)
	e.must(call{method: "GET", path: "/v1/templates/harness-x", cred: e.alice}, 404, nil)
	e.must(call{method: "DELETE", path: "/v1/templates/harness-x", cred: e.admin}, 404, nil)
}
