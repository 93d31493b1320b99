package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlockhq/airlock/client/clienttest"
)

// noRequests is a server that counts what reaches it: a value the CLI
// must refuse is refused before any request.
func noRequests(t *testing.T) (url string, got *atomic.Int64) {
	got = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		http.Error(w, "no request was expected", 500)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// TestOutOfRangeFlagsRefusedBeforeAnyRequest: a duration or a limit out
// of its range (an explicit 0 included) is a usage error that names the
// flag and the range, and nothing is sent.
func TestOutOfRangeFlagsRefusedBeforeAnyRequest(t *testing.T) {
	url, got := noRequests(t)
	// Should a check be missing, run must not fall back to an embedded
	// sandbox in the machine's data dir: this one cannot hold any.
	env := []string{"AIRLOCK_URL=" + url, "AIRLOCK_API_KEY=alk_x", "AIRLOCK_DATA_DIR=" + t.TempDir(), "AIRLOCK_RUN_LOCAL="}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "--timeout", "48h"}, "airlock create: --timeout 48h is longer than the 24h maximum"},
		{[]string{"create", "--timeout", "0"}, "airlock create: --timeout 0 is shorter than the 1s minimum"},
		{[]string{"create", "--timeout", "24h0m1s"}, "airlock create: --timeout 24h0m1s is longer than the 24h maximum"},
		{[]string{"create", "--timeout", "900"}, `invalid value "900" for flag -timeout: "900" has no unit: write 900s`},
		{[]string{"create", "--cpus", "0"}, "airlock create: --cpus 0: want 0.01 to 1024 (leave it out for the default 1)"},
		{[]string{"create", "--cpus", "5000"}, "airlock create: --cpus 5000: want 0.01 to 1024 (leave it out for the default 1)"},
		{[]string{"create", "--pids", "0"}, "airlock create: --pids 0: want 8 to 4194304 (leave it out for the default 256)"},
		{[]string{"create", "--pids", "-5"}, "airlock create: --pids -5: want 8 to 4194304 (leave it out for the default 256)"},
		{[]string{"create", "--pids", "99999999999"}, "airlock create: --pids 99999999999: want 8 to 4194304 (leave it out for the default 256)"},
		{[]string{"create", "--memory", "0"}, "airlock create: --memory 0: want 16M to 16T (leave it out for the default 512M)"},
		{[]string{"create", "--memory", "8M"}, "airlock create: --memory 8M: want 16M to 16T (leave it out for the default 512M)"},
		{[]string{"create", "--disk", "1M"}, "airlock create: --disk 1M: want at least 16M (leave it out for the default 1G)"},
		{[]string{"run", "--cpus", "0", "--", "true"}, "airlock run: --cpus 0: want 0.01 to 1024 (leave it out for the default 1)"},
		{[]string{"run", "--pids", "0", "--", "true"}, "airlock run: --pids 0: want 8 to 4194304 (leave it out for the default 256)"},
		{[]string{"run", "--timeout", "25h", "--", "true"}, "airlock run: --timeout 25h is longer than the 24h maximum"},
		{[]string{"exec", "--timeout", "48h", "sb-1", "true"}, "airlock exec: --timeout 48h is longer than the 24h maximum"},
		{[]string{"timeout", "sb-1", "48h"}, "airlock timeout: 48h is longer than the 24h maximum"},
		{[]string{"timeout", "sb-1", "0"}, "airlock timeout: 0 is shorter than the 1s minimum"},
		{[]string{"template", "build", "t", "--run", "true", "--timeout", "25h"}, "airlock template build: --timeout 25h is longer than the 24h maximum"},
		{[]string{"template", "build", "t", "--run", "true", "--cpus", "0"}, "airlock template build: --cpus 0: want 0.01 to 1024 (leave it out for the default 1)"},
		{[]string{"task", "run", "--timeout", "48h", "--command", "true"}, "airlock task run: --timeout 48h is longer than the 24h maximum"},
		{[]string{"replay", "--idle-limit", "-1s", "sb-1"}, `invalid value "-1s" for flag -idle-limit: "-1s" is negative`},
		{[]string{"create", "--timeout", "soon"}, `invalid value "soon" for flag -timeout: "soon" is not a duration: want a Go duration`},
		{[]string{"timeout", "sb-1", "600"}, `airlock timeout: "600" has no unit: write 600s`},
	} {
		_, errs, code := runCLI(t, env, nil, tc.args...)
		if code != 2 || !strings.HasPrefix(errs, tc.want) {
			t.Errorf("airlock %s: exit %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
	if n := got.Load(); n != 0 {
		t.Errorf("%d requests reached the server; values out of range must be refused before any", n)
	}
}

// TestErrorsSayWhatToDo: no server listening, and a key the server
// refuses, are said in words a person can act on.
func TestErrorsSayWhatToDo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	_, errs, code := runCLI(t, []string{"AIRLOCK_URL=" + closed, "AIRLOCK_API_KEY=alk_x"}, nil, "ls")
	if want := "airlock: no Airlock server at " + closed + " (start one with `airlock serve`)\n"; code != 1 || errs != want {
		t.Errorf("ls with no server: exit %d, stderr %q; want %q", code, errs, want)
	}

	srv := clienttest.NewServer(t)
	_, errs, code = runCLI(t, []string{"AIRLOCK_URL=" + srv.URL, "AIRLOCK_API_KEY=alk_wrong"}, nil, "ls")
	if want := "airlock: the server at " + srv.URL + " refused the API key from $AIRLOCK_API_KEY: missing or unknown credential\n"; code != 1 || errs != want {
		t.Errorf("ls with a wrong key: exit %d, stderr %q; want %q", code, errs, want)
	}
}
