package e2e

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/client"
)

// TestBadInputNamesWhatIsWrong: against the real server and agent, each
// bad path, name or value is a 400 invalid_argument whose message names
// what is wrong (a path the kernel would call too long was a raw
// "file name too long" from the agent), and nothing changes.
func TestBadInputNamesWhatIsWrong(t *testing.T) {
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	base := "/v1/sandboxes/" + sb.ID
	long := strings.Repeat("n", 256)
	deep := "/tmp/" + strings.Repeat("d/", 2046)
	type req struct{ method, path, body string }
	q := func(p string) string { return url.QueryEscape(p) }
	var cases []struct {
		name string
		req
		msg string
	}
	add := func(name string, r req, msg string) {
		cases = append(cases, struct {
			name string
			req
			msg string
		}{name, r, msg})
	}
	// Every file route and exec's cwd, with a name over NAME_MAX, a path
	// over PATH_MAX, a relative path that resolves past it and a NUL.
	for _, bad := range []struct{ name, path, msg string }{
		{"long name", "/tmp/" + long, "a file name is at most 255"},
		{"long relative name", long, "a file name is at most 255"},
		{"long path", deep, "bytes; at most 4095"},
		{"relative path over the bound once resolved", strings.Repeat("d/", 2045), "is 4100 bytes; at most 4095"},
		{"NUL", "a\x00b", "NUL byte"},
	} {
		add("read "+bad.name, req{"GET", base + "/files?path=" + q(bad.path), ""}, bad.msg)
		add("list "+bad.name, req{"GET", base + "/files?list=1&path=" + q(bad.path), ""}, bad.msg)
		add("write "+bad.name, req{"PUT", base + "/files?path=" + q(bad.path), "x"}, bad.msg)
		add("remove "+bad.name, req{"DELETE", base + "/files?path=" + q(bad.path), ""}, bad.msg)
		js := strings.ReplaceAll(bad.path, "\x00", `\u0000`)
		add("mkdir "+bad.name, req{"POST", base + "/files/mkdir", `{"path":"` + js + `"}`}, bad.msg)
		add("move from "+bad.name, req{"POST", base + "/files/move", `{"from":"` + js + `","to":"/tmp/x"}`}, bad.msg)
		add("move to "+bad.name, req{"POST", base + "/files/move", `{"from":"/tmp/x","to":"` + js + `"}`}, bad.msg)
		add("exec cwd "+bad.name, req{"POST", base + "/exec", `{"cmd":["pwd"],"cwd":"` + js + `"}`}, bad.msg)
		add("session cwd "+bad.name, req{"POST", base + "/sessions", `{"cwd":"` + js + `"}`}, bad.msg)
	}
	for _, e := range []struct{ name, js, msg string }{
		{"not a shell name", `{"1X":"v"}`, `environment variable "1X": a name is a shell name`},
		{"dash", `{"MY-VAR":"v"}`, `environment variable "MY-VAR": a name is a shell name`},
		{"NUL in a value", `{"OK":"a\u0000b"}`, `environment variable OK: the value holds a NUL byte`},
	} {
		add("create env "+e.name, req{"POST", "/v1/sandboxes", `{"env":` + e.js + `}`}, e.msg)
		add("exec env "+e.name, req{"POST", base + "/exec", `{"cmd":["env"],"env":` + e.js + `}`}, e.msg)
		add("session env "+e.name, req{"POST", base + "/sessions", `{"env":` + e.js + `}`}, e.msg)
	}
	add("metadata escape", req{"POST", "/v1/sandboxes", `{"metadata":{"k":"\u001b[2Jroot"}}`}, `metadata "k": the value is not printable`)
	add("metadata bidi override", req{"POST", "/v1/sandboxes", `{"metadata":{"owner\u202e":"v"}}`}, `metadata key "owner\u202e": keys are printable`)
	add("metadata NUL", req{"POST", "/v1/sandboxes", `{"metadata":{"k":"v\u0000"}}`}, `metadata "k": the value is not printable`)
	add("metadata key too long", req{"POST", "/v1/sandboxes", `{"metadata":{"` + strings.Repeat("k", 257) + `":"v"}}`}, "keys are 1 to 256 bytes")
	add("NUL in argv", req{"POST", base + "/exec", `{"cmd":["echo","a\u0000b"]}`}, "NUL byte in cmd[1]")
	add("NUL in command", req{"POST", base + "/exec", `{"command":"echo a\u0000b"}`}, "NUL byte in command")
	add("NUL in template", req{"POST", "/v1/sandboxes", `{"template":"base\u0000"}`}, `template "base\x00"`)
	add("NUL in workdir", req{"POST", "/v1/sandboxes", `{"workdir":"/home/user\u0000"}`}, "workdir: NUL byte in path")
	add("NUL in a hostname", req{"PUT", base + "/network", `{"mode":"allowlist","allow":["example.com\u0000.evil.test"]}`}, "control character")
	add("NUL in a URL path", req{"GET", "/v1/templates/base%00", ""}, "NUL byte in the URL path")

	for _, tc := range cases {
		ctype := "application/json"
		if strings.Contains(tc.path, "/files?") {
			ctype = "application/octet-stream"
		}
		code, body := call(t, s, s.adminKey, tc.method, tc.path, ctype, tc.body)
		var e struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal([]byte(body), &e)
		if code != 400 || e.Error.Code != "invalid_argument" || !strings.Contains(e.Error.Message, tc.msg) {
			t.Errorf("%s: %d %.300s; want 400 with %q", tc.name, code, body, tc.msg)
		}
		if len(e.Error.Message) > 400 {
			t.Errorf("%s: a %d-byte message repeats the input", tc.name, len(e.Error.Message))
		}
	}
	// Nothing was made.
	res := must[client.ExecResult](t)(c.Exec(ctx, sb.ID, client.ExecRequest{Command: "ls -A /tmp /home/user | grep -v '^/' | grep -c . || true"}))
	if strings.TrimSpace(res.Stdout) != "0" {
		t.Errorf("refused requests left files: %q", res.Stdout)
	}
	if page := must[client.Page](t)(c.ListSandboxes(ctx, client.ListOptions{})); len(page.Sandboxes) != 1 {
		t.Errorf("refused creates left %d sandboxes", len(page.Sandboxes))
	}
}
