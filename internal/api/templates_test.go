package api

import "testing"

func TestTemplates(t *testing.T) {
	e := newEnv(t)
	var out struct {
		Templates []struct{ Name, Description string }
	}
	e.must(call{method: "GET", path: "/v1/templates", cred: e.alice}, 200, &out)
	if len(out.Templates) != 1 || out.Templates[0].Name != "base" || out.Templates[0].Description == "" {
		t.Fatalf("templates %+v, want base with a description", out.Templates)
	}
}
