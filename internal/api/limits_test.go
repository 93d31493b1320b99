package api

import (
	"strings"
	"testing"
)

// TestCreateLimitsOutOfRange: a limit out of its range is a 400 that
// names the field and the range, creates nothing, and 0 (or no field)
// still asks for the default.
func TestCreateLimitsOutOfRange(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		body, msg string
	}{
		{`{"cpus":-1}`, `field "cpus" is -1; want 0.01 to 1024`},
		{`{"cpus":0.001}`, `field "cpus" is 0.001; want 0.01 to 1024`},
		{`{"cpus":100000}`, `field "cpus" is 100000; want 0.01 to 1024`},
		{`{"pids":-1}`, `field "pids" is -1; want 8 to 4194304`},
		{`{"pids":2}`, `field "pids" is 2; want 8 to 4194304`},
		{`{"pids":1000000000000}`, `field "pids" is 1000000000000; want 8 to 4194304`},
		{`{"memory_mb":-5}`, `field "memory_mb" is -5; want 16 to 16777216`},
		{`{"memory_mb":99999999999}`, `field "memory_mb" is 99999999999; want 16 to 16777216`},
		{`{"disk_mb":3}`, `field "disk_mb" is 3; want at least 16`},
	} {
		before := len(e.m.sandboxes)
		a := e.do(call{method: "POST", path: "/v1/sandboxes", body: tc.body, cred: e.alice})
		code, msg := a.errCode()
		if a.status != 400 || code != "invalid_argument" || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %d %s %q; want 400 invalid_argument with %q", tc.body, a.status, code, msg, tc.msg)
		}
		if len(e.m.sandboxes) != before {
			t.Errorf("%s: a refused create made a sandbox", tc.body)
		}
	}
	if a := e.do(call{method: "POST", path: "/v1/sandboxes", body: `{"cpus":0,"pids":0}`, cred: e.alice}); a.status != 201 {
		t.Errorf("cpus 0, pids 0 (the defaults): %d %s", a.status, a.body)
	}
}
