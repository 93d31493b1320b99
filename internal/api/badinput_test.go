package api

import (
	"strings"
	"testing"
)

// TestBadInput: every refused request gets a 4xx with the right code and a
// message that names what is wrong, and changes nothing.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	id := e.sandbox(e.alice)
	sb := "/v1/sandboxes/" + id
	big := `{"command":"` + strings.Repeat("x", 5000) + `"}` // over the test's 4 KiB limit
	for _, tc := range []struct {
		name string
		call
		status int
		msg    string // a substring of the message
	}{
		{"malformed", call{method: "POST", path: sb + "/exec", body: `{"cmd":`}, 400, "malformed JSON"},
		{"syntax", call{method: "POST", path: sb + "/exec", body: `{"cmd" ["a"]}`}, 400, "malformed JSON at byte"},
		{"unknown field", call{method: "POST", path: "/v1/sandboxes", body: `{"cpu":2}`}, 400, `unknown field "cpu"`},
		{"wrong type", call{method: "POST", path: "/v1/sandboxes", body: `{"memory_mb":"lots"}`}, 400, `field "memory_mb": got a JSON string, want an integer`},
		{"not an object", call{method: "POST", path: sb + "/exec", body: `["ls"]`}, 400, "not a JSON object"},
		{"null", call{method: "POST", path: sb + "/exec", body: `null`}, 400, "not a JSON object"},
		{"trailing data", call{method: "POST", path: sb + "/exec", body: `{"cmd":["ls"]} {}`}, 400, "data after the JSON object"},
		{"trailing brace", call{method: "POST", path: sb + "/exec", body: `{"cmd":["ls"]}}`}, 400, "data after the JSON object"},
		{"wrong content type", call{method: "POST", path: sb + "/exec", body: `{"cmd":["ls"]}`, ctype: "text/plain"}, 415, "want application/json"},
		{"no content type", call{method: "POST", path: sb + "/exec", body: `{"cmd":["ls"]}`, ctype: "-"}, 415, "Content-Type is missing"},
		{"json with charset", call{method: "POST", path: sb + "/exec", body: `{"cmd":["x"]}`, ctype: "application/json; charset=utf-8"}, 200, ""},
		{"oversized", call{method: "POST", path: sb + "/exec", body: big}, 413, "larger than 4096 bytes"},
		{"empty exec body", call{method: "POST", path: sb + "/exec", ctype: "application/json"}, 400, "body is empty"},
		{"empty timeout body", call{method: "POST", path: sb + "/timeout", ctype: "application/json"}, 400, "body is empty"},
		{"exec neither", call{method: "POST", path: sb + "/exec", body: `{"cwd":"/"}`}, 400, `"cmd"`},
		{"exec both", call{method: "POST", path: sb + "/exec", body: `{"cmd":["a"],"command":"a"}`}, 400, "exclusive"},
		{"exec empty argv0", call{method: "POST", path: sb + "/exec", body: `{"cmd":[""]}`}, 400, "cmd[0]"},
		{"exec timeout", call{method: "POST", path: sb + "/exec", body: `{"cmd":["a"],"timeout_s":-1}`}, 400, `"timeout_s"`},
		{"create timeout", call{method: "POST", path: "/v1/sandboxes", body: `{"timeout_s":86401}`}, 400, `"timeout_s"`},
		{"create cpus", call{method: "POST", path: "/v1/sandboxes", body: `{"cpus":-1}`}, 400, `"cpus"`},
		{"create memory", call{method: "POST", path: "/v1/sandboxes", body: `{"memory_mb":-5}`}, 400, `"memory_mb"`},
		{"timeout zero", call{method: "POST", path: sb + "/timeout", body: `{"timeout_s":0}`}, 400, `"timeout_s"`},
		{"ttl zero", call{method: "POST", path: sb + "/tokens", body: `{"ttl_s":0}`}, 400, `"ttl_s"`},
		{"ttl too long", call{method: "POST", path: sb + "/tokens", body: `{"ttl_s":86401}`}, 400, `"ttl_s"`},
		{"bad mode", call{method: "PUT", path: sb + "/files?path=a&mode=rw", body: "x"}, 400, "query parameter mode"},
		{"mode 9", call{method: "PUT", path: sb + "/files?path=a&mode=0699", body: "x"}, 400, "octal"},
		{"mode setuid", call{method: "PUT", path: sb + "/files?path=a&mode=4755", body: "x"}, 400, "0777"},
		{"put no path", call{method: "PUT", path: sb + "/files", body: "x"}, 400, `"path" is required`},
		{"get no path", call{method: "GET", path: sb + "/files"}, 400, `"path" is required`},
		{"bad list flag", call{method: "GET", path: sb + "/files?path=.&list=yes"}, 400, "list="},
		{"bad recursive", call{method: "DELETE", path: sb + "/files?path=a&recursive=2"}, 400, "recursive="},
		{"unknown query", call{method: "DELETE", path: sb + "/files?path=a&recursiv=1"}, 400, `"recursiv"`},
		{"mkdir no path", call{method: "POST", path: sb + "/files/mkdir", body: `{}`}, 400, `"path" is required`},
		{"mkdir bad mode", call{method: "POST", path: sb + "/files/mkdir", body: `{"path":"d","mode":"755x"}`}, 400, `field "mode"`},
		{"mkdir numeric mode", call{method: "POST", path: sb + "/files/mkdir", body: `{"path":"d","mode":493}`}, 400, `field "mode"`},
		{"move no to", call{method: "POST", path: sb + "/files/move", body: `{"from":"a"}`}, 400, `"to"`},
		{"audit bad type", call{method: "GET", path: sb + "/audit?type=exec.started,,x"}, 400, "type="},
		{"audit bad from", call{method: "GET", path: sb + "/audit?from=yesterday"}, 400, "from="},
		{"audit bad to", call{method: "GET", path: sb + "/audit?to=2026-13-01"}, 400, "to="},
		{"audit bad after", call{method: "GET", path: sb + "/audit?after=-1"}, 400, "after="},
		{"audit bad limit", call{method: "GET", path: sb + "/audit?limit=0"}, 400, "limit="},
		{"audit unknown query", call{method: "GET", path: sb + "/audit?typ=x"}, 400, `"typ"`},
		{"limit zero", call{method: "GET", path: "/v1/sandboxes?limit=0"}, 400, "limit="},
		{"limit big", call{method: "GET", path: "/v1/sandboxes?limit=1001"}, 400, "limit="},
		{"limit word", call{method: "GET", path: "/v1/sandboxes?limit=ten"}, 400, "limit="},
		{"bad after", call{method: "GET", path: "/v1/sandboxes?after=a%20b"}, 400, "after="},
		{"bad state", call{method: "GET", path: "/v1/sandboxes?state=dead"}, 400, "state="},
		{"twice", call{method: "GET", path: "/v1/sandboxes?limit=1&limit=2"}, 400, "2 times"},
		{"unknown list param", call{method: "GET", path: "/v1/sandboxes?sort=id"}, 400, `"sort"`},
		{"empty metadata key", call{method: "GET", path: "/v1/sandboxes?metadata.=x"}, 400, `"metadata."`},
		{"tenant no name", call{method: "POST", path: "/v1/tenants", cred: e.admin, body: `{}`}, 400, `field "name"`},
		{"tenant bad name", call{method: "POST", path: "/v1/tenants", cred: e.admin, body: `{"name":"a b"}`}, 400, `field "name"`},
		{"tenant quota", call{method: "POST", path: "/v1/tenants", cred: e.admin, body: `{"name":"q","max_sandboxes":-1}`}, 400, `"max_sandboxes"`},
		{"tenant update nothing", call{method: "PATCH", path: "/v1/tenants/alice", cred: e.admin, body: `{}`}, 400, `"max_sandboxes", "max_memory_mb" and "max_storage_mb"`},
		{"tenant update negative", call{method: "PATCH", path: "/v1/tenants/alice", cred: e.admin, body: `{"max_memory_mb":-1}`}, 400, `"max_memory_mb"`},
		{"tenant update negative storage", call{method: "PATCH", path: "/v1/tenants/alice", cred: e.admin, body: `{"max_storage_mb":-1}`}, 400, `"max_storage_mb" is -1`},
		{"tenant create huge storage", call{method: "POST", path: "/v1/tenants", cred: e.admin, body: `{"name":"big","max_storage_mb":1099511627777}`}, 400, `"max_storage_mb" is 1099511627777`},
		{"tenant update unknown field", call{method: "PATCH", path: "/v1/tenants/alice", cred: e.admin, body: `{"name":"x"}`}, 400, `"name"`},
		{"tenant update unknown tenant", call{method: "PATCH", path: "/v1/tenants/zed", cred: e.admin, body: `{"max_sandboxes":1}`}, 404, `tenant "zed" not found`},
		{"key no tenant", call{method: "POST", path: "/v1/keys", cred: e.admin, body: `{"name":"k"}`}, 400, `"tenant"`},
		{"key unknown tenant", call{method: "POST", path: "/v1/keys", cred: e.admin, body: `{"tenant":"zed"}`}, 404, `tenant "zed" not found`},
		{"path too long", call{method: "GET", path: sb + "/files?path=/" + strings.Repeat("a", 4095)}, 400, `"path" is 4096 bytes; at most 4095`},
		{"NUL in file path", call{method: "GET", path: sb + "/files?path=a%00b"}, 400, `NUL byte in query parameter "path"`},
		{"NUL in a query name", call{method: "GET", path: "/v1/sandboxes?metadata.k%00=v"}, 400, `NUL byte in query parameter "metadata.k\x00"`},
		{"NUL in a metadata filter", call{method: "GET", path: "/v1/sandboxes?metadata.k=v%00"}, 400, `NUL byte in query parameter "metadata.k"`},
		{"NUL in a sandbox id", call{method: "GET", path: "/v1/sandboxes/sb%00x"}, 400, "NUL byte in the URL path"},
		{"NUL in a template name", call{method: "GET", path: "/v1/templates/base%00"}, 400, "NUL byte in the URL path"},
		{"NUL in a secret name", call{method: "DELETE", path: "/v1/secrets/K%00"}, 400, "NUL byte in the URL path"},
		{"no route", call{method: "GET", path: "/v1/nope"}, 404, "no route"},
		{"PUT on a PATCH route", call{method: "PUT", path: "/v1/tenants/alice", cred: e.admin, body: `{}`}, 405, "allowed: PATCH"},
		{"wrong method", call{method: "PATCH", path: sb}, 405, "allowed: GET, HEAD, DELETE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cred == "" {
				tc.cred = e.alice
			}
			before := len(e.m.sandboxes)
			a := e.do(tc.call)
			if a.status != tc.status {
				t.Fatalf("status %d, want %d; body %s", a.status, tc.status, a.body)
			}
			if tc.status < 300 {
				return
			}
			code, msg := a.errCode()
			want := map[int]string{400: "invalid_argument", 413: "invalid_argument", 415: "invalid_argument",
				404: "not_found", 405: "method_not_allowed"}[tc.status]
			if code != want || !strings.Contains(msg, tc.msg) {
				t.Errorf("error %q %q, want %q with %q", code, msg, want, tc.msg)
			}
			if len(e.m.sandboxes) != before {
				t.Error("a refused request changed the sandboxes")
			}
		})
	}
}
