package api

import (
	"strings"
	"testing"
)

func TestSecretRoutes(t *testing.T) {
	e := newEnv(t)
	var info struct {
		Name  string
		Hosts []string
		Value *string
	}
	a := e.must(call{method: "POST", path: "/v1/secrets", cred: e.alice,
		body: `{"name":"OPENAI_API_KEY","value":"sk-real","hosts":["api.openai.com"],"inject":{"header":"Authorization","format":"Bearer {value}"}}`}, 201, &info)
	if info.Name != "OPENAI_API_KEY" || info.Value != nil || strings.Contains(string(a.body), "sk-real") {
		t.Errorf("create answered %s", a.body)
	}
	e.must(call{method: "POST", path: "/v1/secrets", cred: e.alice,
		body: `{"name":"OPENAI_API_KEY","value":"x","hosts":["a.test"]}`}, 409, nil)
	a = e.must(call{method: "GET", path: "/v1/secrets", cred: e.alice}, 200, nil)
	if !strings.Contains(string(a.body), "OPENAI_API_KEY") || strings.Contains(string(a.body), "sk-real") {
		t.Errorf("list: %s", a.body)
	}
	// Tenant-scoped: bob sees none and cannot touch alice's.
	a = e.must(call{method: "GET", path: "/v1/secrets", cred: e.bob}, 200, nil)
	if strings.Contains(string(a.body), "OPENAI") {
		t.Errorf("bob lists alice's secret: %s", a.body)
	}
	e.must(call{method: "PUT", path: "/v1/secrets/OPENAI_API_KEY", cred: e.bob, body: `{"value":"stolen"}`}, 404, nil)
	e.must(call{method: "DELETE", path: "/v1/secrets/OPENAI_API_KEY", cred: e.bob}, 404, nil)
	// A sandbox token manages no secrets.
	tok := e.token(e.alice, e.sandbox(e.alice), 60)
	e.must(call{method: "GET", path: "/v1/secrets", cred: tok}, 403, nil)

	e.must(call{method: "PUT", path: "/v1/secrets/OPENAI_API_KEY", cred: e.alice, body: `{"value":"sk-new"}`}, 200, nil)
	for _, tc := range []struct{ body, want string }{
		{`{"name":"","value":"v","hosts":["a.test"]}`, "name"},
		{`{"name":"1BAD","value":"v","hosts":["a.test"]}`, "name"},
		{`{"name":"OK","value":"v","hosts":[]}`, "hosts"},
		{`{"name":"OK","value":"","hosts":["a.test"]}`, "value"},
		{`{"name":"OK","value":"v","hosts":["https://a.test"]}`, "hosts[0]"},
		{`{"name":"OK","value":"v","hosts":["a.test"],"inject":{"header":"Host","format":"{value}"}}`, "header"},
		{`{"name":"OK","value":"v","hosts":["a.test"],"extra":1}`, "extra"},
	} {
		a := e.do(call{method: "POST", path: "/v1/secrets", cred: e.alice, body: tc.body})
		if code, msg := a.errCode(); a.status != 400 || !strings.Contains(msg, tc.want) {
			t.Errorf("POST %.60s: %d %s %q, want 400 naming %s", tc.body, a.status, code, msg, tc.want)
		}
	}
	e.must(call{method: "DELETE", path: "/v1/secrets/OPENAI_API_KEY", cred: e.alice}, 204, nil)
	e.must(call{method: "DELETE", path: "/v1/secrets/OPENAI_API_KEY", cred: e.alice}, 404, nil)
}
