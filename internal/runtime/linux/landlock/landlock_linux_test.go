package landlock

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/testenv"
)

// requireLandlock skips where the kernel has no Landlock, after checking
// that Restrict then says so with the sentinel the sandbox init tests for.
func requireLandlock(t *testing.T) int {
	t.Helper()
	abi := ABI()
	if abi > 0 {
		return abi
	}
	if lsm, err := os.ReadFile("/sys/kernel/security/lsm"); err == nil && strings.Contains(string(lsm), "landlock") {
		t.Fatalf("ABI() = 0 but the kernel lists landlock among its LSMs: %s", lsm)
	}
	got, err := Restrict([]string{"/"}, nil)
	if got != 0 || err != ErrUnsupported || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Restrict without landlock = %d, %v; want 0, ErrUnsupported", got, err)
	}
	testenv.Unsupported(t, "kernel without landlock")
	return 0
}

// buildSubject compiles testdata/restrict statically: the test binary
// itself cannot serve under -race, where cgo keeps AllThreadsSyscall away.
func buildSubject(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		testenv.Lacking(t, "no go tool in PATH to build the test subject")
	}
	bin := filepath.Join(t.TempDir(), "restrict")
	cmd := exec.Command(goTool, "build", "-buildvcs=false", "-o", bin, ".")
	cmd.Dir = filepath.Join("testdata", "restrict")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build test subject: %v\n%s", err, out)
	}
	return bin
}

func TestRestrict(t *testing.T) {
	abi := requireLandlock(t)
	t.Logf("landlock ABI %d", abi)
	subject := buildSubject(t)
	rw, other := t.TempDir(), t.TempDir()
	rwFile := filepath.Join(other, "allowed")
	readFile := filepath.Join(other, "readme")
	for _, f := range []string{rwFile, readFile} {
		if err := os.WriteFile(f, []byte("hello"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(subject, rw, other, rwFile, readFile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("restricted subject: %v\n%s", err, stderr.Bytes())
	}
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("subject output %q: %v", out, err)
	}
	want := map[string]string{
		"abi matches":              "ok",
		"write in rw dir":          "ok",
		"mkdir in rw dir":          "ok",
		"remove in rw dir":         "ok",
		"write in other dir":       "EACCES",
		"mkdir in other dir":       "EACCES",
		"write rw file":            "ok",
		"truncate read-only file":  "EACCES",
		"rename rw to other":       "EACCES",
		"read file":                "ok",
		"list other dir":           "ok",
		"older thread confined":    "ok",
		"child write in other dir": "EACCES",
	}
	if abi < 3 {
		// Before ABI 3 truncate is not a right of its own.
		want["truncate read-only file"] = "ok"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restricted subject (-want +got):\n%s", diff)
	}
	// The writes the subject was allowed really happened, the others not.
	if b, err := os.ReadFile(rwFile); err != nil || string(b) != "y" {
		t.Errorf("rw file = %q, %v; want \"y\"", b, err)
	}
	entries, _ := os.ReadDir(other)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"allowed", "readme"}, names); diff != "" {
		t.Errorf("other dir after the subject ran (-want +got):\n%s", diff)
	}
}
