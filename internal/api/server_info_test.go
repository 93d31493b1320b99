package api

import (
	"strings"
	"testing"
)

// TestServerInfoTellsAdminsTheDataDir: GET /v1/server gives an admin the
// server's data dir (airlock doctor checks that one) and a tenant nothing.
func TestServerInfoTellsAdminsTheDataDir(t *testing.T) {
	e := newEnvWith(t, Options{DataDir: "/srv/airlock-a"})
	var si struct {
		DataDir string `json:"data_dir"`
	}
	e.must(call{method: "GET", path: "/v1/server", cred: e.admin}, 200, &si)
	if si.DataDir != "/srv/airlock-a" {
		t.Errorf("data_dir %q, want /srv/airlock-a", si.DataDir)
	}
	if a := e.do(call{method: "GET", path: "/v1/server", cred: e.alice}); a.status != 403 {
		t.Errorf("a tenant's GET /v1/server: %d %s, want 403", a.status, a.body)
	}
}

// TestAnswersKeepAngleBrackets: a JSON answer carries "<", ">" and "&"
// as they are, not HTML's \u003c escapes a person then reads in curl or
// the CLI.
func TestAnswersKeepAngleBrackets(t *testing.T) {
	e := newEnvWith(t, Options{DataDir: "/srv/<a>&b"})
	a := e.must(call{method: "GET", path: "/v1/server", cred: e.admin}, 200, nil)
	if got := string(a.body); !strings.HasPrefix(got, `{"data_dir":"/srv/<a>&b",`) {
		t.Errorf("answer %s", got)
	}
}
