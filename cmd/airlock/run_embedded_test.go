package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestRunSaysWhenEmbedded: a run that does not reach a server says so on
// stderr, in one line that names why and the data dir; the command's own
// output is untouched.
func TestRunSaysWhenEmbedded(t *testing.T) {
	linuxtest.Require(t)
	state := linuxtest.StateDir(t)
	out, errs, code := runCLI(t, []string{"AIRLOCK_DATA_DIR=" + state, "AIRLOCK_RUN_LOCAL=1"}, nil, "run", "--", "echo", "hi")
	want := "airlock: running embedded, not on a server (AIRLOCK_RUN_LOCAL=1); data in " + state + "\n"
	if code != 0 || out != "hi\n" || errs != want {
		t.Errorf("run: exit %d, stdout %q, stderr %q; want hi and %q", code, out, errs, want)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	_, errs, _ = runCLI(t, []string{"AIRLOCK_DATA_DIR=" + state, "AIRLOCK_RUN_LOCAL=", "AIRLOCK_URL=" + url, "AIRLOCK_API_KEY=alk_x"}, nil, "run", "--", "true")
	if want := "airlock: running embedded, not on a server (no server answers at " + url + "); data in " + state + "\n"; errs != want {
		t.Errorf("run with no server: stderr %q, want %q", errs, want)
	}
}

// TestRunDataDirAndItsOldName: --data-dir, its old name --state-dir, and
// $AIRLOCK_DATA_DIR all name where an embedded run keeps its state; a
// flag wins over the environment.
func TestRunDataDirAndItsOldName(t *testing.T) {
	linuxtest.Require(t)
	env, flagDir, oldDir := linuxtest.StateDir(t), linuxtest.StateDir(t), linuxtest.StateDir(t)
	for _, tc := range []struct {
		args []string
		dir  string
	}{
		{[]string{"run", "--data-dir", flagDir, "--", "true"}, flagDir},
		{[]string{"run", "--state-dir", oldDir, "--", "true"}, oldDir},
		{[]string{"run", "--", "true"}, env},
	} {
		_, errs, code := runCLI(t, []string{"AIRLOCK_DATA_DIR=" + env, "AIRLOCK_RUN_LOCAL=1"}, nil, tc.args...)
		if code != 0 || !strings.Contains(errs, "data in "+tc.dir+"\n") {
			t.Errorf("airlock %s: exit %d, stderr %q", strings.Join(tc.args, " "), code, errs)
		}
		if _, err := os.Stat(filepath.Join(tc.dir, "templates", "base")); err != nil {
			t.Errorf("airlock %s: nothing in %s: %v", strings.Join(tc.args, " "), tc.dir, err)
		}
	}
}

// TestDoctorReportsOnTheDataDirGiven: doctor names the data dir it checks
// and why that one, and refuses one given that does not exist instead of
// making it.
func TestDoctorReportsOnTheDataDirGiven(t *testing.T) {
	linuxtest.Require(t)
	state := linuxtest.StateDir(t)
	out, errs, _ := runCLI(t, []string{"AIRLOCK_DATA_DIR="}, nil, "doctor", "--data-dir", state)
	if !strings.Contains(out, "data dir      "+state+" (given with --data-dir)") || !strings.Contains(out, "protections for sandboxes created on "+state) {
		t.Errorf("doctor --data-dir: stdout %q, stderr %q", out, errs)
	}
	missing := filepath.Join(state, "nope")
	_, errs, code := runCLI(t, []string{"AIRLOCK_DATA_DIR="}, nil, "doctor", "--data-dir", missing)
	if code != 2 || errs != "airlock doctor: --data-dir "+missing+": no such file or directory\n" {
		t.Errorf("doctor on a missing dir: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("doctor made %s", missing)
	}
}
