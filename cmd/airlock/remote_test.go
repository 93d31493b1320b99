package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/client/clienttest"
	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// remoteCLI runs the built binary against srv with srv's admin key and an
// empty data dir, and returns what it printed and its exit status.
func remoteCLI(t *testing.T, srv *clienttest.Server, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCLI(t, []string{"AIRLOCK_URL=" + srv.URL, "AIRLOCK_API_KEY=" + srv.AdminKey,
		"AIRLOCK_DATA_DIR=" + t.TempDir()}, stdin, args...)
}

// runCLI runs the built binary with env added to this process's and
// returns what it printed and its exit code.
func runCLI(t *testing.T, env []string, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin, _ := linuxtest.Build(t) // builds without root; only running sandboxes needs it
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run airlock: %v", err)
	}
	return out.String(), errb.String(), code
}

// mustCLI runs a command that must succeed and returns its stdout.
func mustCLI(t *testing.T, srv *clienttest.Server, args ...string) string {
	t.Helper()
	out, errs, code := remoteCLI(t, srv, nil, args...)
	if code != 0 {
		t.Fatalf("airlock %s: exit %d, stderr %q", strings.Join(args, " "), code, errs)
	}
	return out
}

func adminClient(srv *clienttest.Server) *client.Client { return client.New(srv.URL, srv.AdminKey) }

func TestRemoteCreatePrintsID(t *testing.T) {
	srv := clienttest.NewServer(t)
	out := mustCLI(t, srv, "create", "--memory", "1G", "--cpus", "2", "--timeout", "10m", "--metadata", "team=a", "--env", "A=1", "--workdir", "/tmp")
	id := strings.TrimSpace(out)
	if out != id+"\n" || id == "" {
		t.Fatalf("create printed %q; want an id and a newline", out)
	}
	sb, err := adminClient(srv).GetSandbox(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if sb.Limits.MemoryMB != 1024 || sb.Limits.CPUs != 2 || sb.Metadata["team"] != "a" || sb.Workdir != "/tmp" ||
		sb.ExpiresAt.Sub(sb.CreatedAt).Minutes() != 10 {
		t.Errorf("created %+v; want 1024 MiB, 2 CPUs, team=a, /tmp, 10m", sb)
	}
}

func TestRemoteExecExitCode(t *testing.T) {
	srv := clienttest.NewServer(t)
	argvs := make(chan []string, 1)
	srv.SetExec(func(argv []string, stdout, stderr io.Writer) (int, int) {
		argvs <- argv
		io.WriteString(stdout, "to stdout\n")
		io.WriteString(stderr, "to stderr\n")
		switch argv[0] {
		case "exit7":
			return 7, 0
		case "killed":
			return 0, 9
		}
		return 0, 0
	})
	id := strings.TrimSpace(mustCLI(t, srv, "create"))
	for _, tc := range []struct {
		args     []string
		wantArgv []string
		code     int
	}{
		{[]string{"exec", id, "--", "exit7", "-la"}, []string{"exit7", "-la"}, 7},
		{[]string{"exec", "--timeout", "5s", id, "killed"}, []string{"killed"}, 128 + 9},
		// The command's own flags are the command's, with or without "--".
		{[]string{"exec", id, "--env", "A=1", "ok", "--env", "x"}, []string{"ok", "--env", "x"}, 0},
	} {
		out, errs, code := remoteCLI(t, srv, nil, tc.args...)
		if code != tc.code || out != "to stdout\n" || errs != "to stderr\n" {
			t.Errorf("airlock %v: exit %d, stdout %q, stderr %q; want exit %d and the command's output", tc.args, code, out, errs, tc.code)
		}
		if diff := cmp.Diff(tc.wantArgv, <-argvs); diff != "" {
			t.Errorf("airlock %v: argv (-want +got):\n%s", tc.args, diff)
		}
	}
}

func TestRemoteCpByteExact(t *testing.T) {
	srv := clienttest.NewServer(t)
	id := strings.TrimSpace(mustCLI(t, srv, "create"))
	dir := t.TempDir()
	data := make([]byte, 3<<20+17)
	rand.Read(data)
	src := filepath.Join(dir, "data.bin")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}

	mustCLI(t, srv, "cp", src, id+":in/data.bin")
	out := mustCLI(t, srv, "cp", id+":in/data.bin", "-")
	if !bytes.Equal([]byte(out), data) {
		t.Errorf("cp to stdout: %d bytes differ from the %d uploaded", len(out), len(data))
	}
	back := filepath.Join(dir, "back")
	os.Mkdir(back, 0o755)
	mustCLI(t, srv, "cp", id+":/home/user/in/data.bin", back) // into a directory
	if got, err := os.ReadFile(filepath.Join(back, "data.bin")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("cp into a directory: %d bytes, %v", len(got), err)
	}

	if _, errs, code := remoteCLI(t, srv, bytes.NewReader(data[:1000]), "cp", "-", id+":stdin.bin"); code != 0 {
		t.Fatalf("cp from stdin: exit %d, %s", code, errs)
	}
	var got bytes.Buffer
	if _, err := adminClient(srv).ReadFile(context.Background(), id, "stdin.bin", &got); err != nil || !bytes.Equal(got.Bytes(), data[:1000]) {
		t.Errorf("cp from stdin stored %d bytes, %v", got.Len(), err)
	}

	// A wrong path leaves a local file of the same name as it was.
	keep := filepath.Join(dir, "keep")
	os.WriteFile(keep, []byte("mine"), 0o600)
	_, errs, code := remoteCLI(t, srv, nil, "cp", id+":nope", keep)
	if b, _ := os.ReadFile(keep); code != 1 || string(b) != "mine" || !strings.HasPrefix(errs, "airlock: ") {
		t.Errorf("cp of a missing file: exit %d, stderr %q, local file now %q", code, errs, b)
	}
}

func TestRemoteLsAndRm(t *testing.T) {
	srv := clienttest.NewServer(t)
	a := strings.TrimSpace(mustCLI(t, srv, "create", "--metadata", "team=a"))
	b := strings.TrimSpace(mustCLI(t, srv, "create", "--metadata", "team=b", "--template", "python"))
	sb, _ := adminClient(srv).GetSandbox(context.Background(), b)
	wantB := fmt.Sprintf("%s  running  python    local  %s  %s", b, timeCell(sb.CreatedAt), timeCell(sb.ExpiresAt))

	lines := strings.Split(strings.TrimSuffix(mustCLI(t, srv, "ls"), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[1], a+"  running  base") || lines[2] != wantB {
		t.Errorf("ls printed\n%s\nwant a header, %s, then %q", strings.Join(lines, "\n"), a, wantB)
	}
	if out := mustCLI(t, srv, "ls", "--metadata", "team=b"); strings.Contains(out, a) || !strings.Contains(out, b) {
		t.Errorf("ls --metadata team=b printed\n%s", out)
	}

	mustCLI(t, srv, "rm", a, b)
	// A destroyed sandbox stays listed, stopped, as the real server keeps it.
	if out := mustCLI(t, srv, "ls"); strings.Count(out, "\n") != 3 || strings.Count(out, "  stopped  ") != 2 {
		t.Errorf("ls after rm printed\n%s\nwant the header and both sandboxes stopped", out)
	}
	// rm goes on past a missing sandbox, and says which one failed.
	c := strings.TrimSpace(mustCLI(t, srv, "create"))
	_, errs, code := remoteCLI(t, srv, nil, "rm", "sb-missing", c)
	if code != 1 || errs != "airlock: rm sb-missing: sandbox sb-missing not found\n" {
		t.Errorf("rm of a missing sandbox: exit %d, stderr %q", code, errs)
	}
	if sb, err := adminClient(srv).GetSandbox(context.Background(), c); err != nil || sb.State != client.StateStopped {
		t.Errorf("the sandbox after the missing one: %+v, %v; want it stopped", sb, err)
	}
}

func TestRemoteServerErrorExits1(t *testing.T) {
	srv := clienttest.NewServer(t)
	out, errs, code := remoteCLI(t, srv, nil, "timeout", "sb-nope", "10m")
	if code != 1 || out != "" || errs != "airlock: sandbox sb-nope not found\n" {
		t.Errorf("timeout of a missing sandbox: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	_, errs, code = remoteCLI(t, srv, nil, "create", "--template", "nope")
	if code != 1 || errs != "airlock: template \"nope\"\n" {
		t.Errorf("create --template nope: exit %d, stderr %q", code, errs)
	}
}

func TestRemoteUsageErrorsExit2(t *testing.T) {
	srv := clienttest.NewServer(t)
	for _, args := range [][]string{
		{"create", "--bogus"},
		{"create", "--memory", "lots"},
		{"create", "--env", "NOEQUALS"},
		{"create", "extra"},
		{"exec", "sb-1"},
		{"exec"},
		{"ls", "--state"},
		{"rm"},
		{"cp", "a", "b"},
		{"cp", "sb-1:a", "sb-2:b"},
		{"cp", "sb-1:", "x"},
		{"timeout", "sb-1"},
		{"timeout", "sb-1", "soon"},
		{"tenants"},
		{"tenants", "frob"},
		{"tenants", "create"},
		{"tenants", "set"},
		{"tenants", "set", "acme"},
		{"tenants", "set", "acme", "--max-memory", "lots"},
		{"tenants", "set", "acme", "--max-storage", "lots"},
		{"tenants", "create", "acme", "--max-storage", "-1G"},
		{"keys", "create"},
		{"keys", "rm"},
	} {
		_, errs, code := remoteCLI(t, srv, nil, args...)
		if code != 2 || errs == "" {
			t.Errorf("airlock %s: exit %d, stderr %q; want 2 and a usage message", strings.Join(args, " "), code, errs)
		}
	}
}

func TestRemoteTimeout(t *testing.T) {
	srv := clienttest.NewServer(t)
	id := strings.TrimSpace(mustCLI(t, srv, "create"))
	mustCLI(t, srv, "timeout", id, "2h")
	sb, _ := adminClient(srv).GetSandbox(context.Background(), id)
	if d := sb.ExpiresAt.Sub(sb.CreatedAt).Hours(); d < 1.9 || d > 2.1 {
		t.Errorf("after timeout 2h the sandbox expires %.2fh after creation", d)
	}
}

func TestRemoteTenantsAndKeys(t *testing.T) {
	srv := clienttest.NewServer(t)
	tid := strings.TrimSpace(mustCLI(t, srv, "tenants", "create", "acme", "--max-memory", "4G", "--max-sandboxes", "3"))
	if out := mustCLI(t, srv, "tenants", "ls"); !strings.Contains(out, tid+"  acme  3              4096M") {
		t.Errorf("tenants ls printed\n%s", out)
	}
	if out := mustCLI(t, srv, "tenants", "set", "acme", "--max-memory", "0", "--max-sandboxes", "5"); !strings.Contains(out, "acme: max sandboxes 5, max memory -") {
		t.Errorf("tenants set printed %q", out)
	}
	if out := mustCLI(t, srv, "tenants", "ls"); !strings.Contains(out, tid+"  acme  5              -") {
		t.Errorf("tenants ls after set printed\n%s", out)
	}
	// The storage quota: the default unless given, 0 lifts it.
	mustCLI(t, srv, "tenants", "create", "logs", "--max-storage", "1G")
	if out := mustCLI(t, srv, "tenants", "ls"); !strings.Contains(out, "MAX STORAGE") || !regexp.MustCompile(`acme .* 2048M `).MatchString(out) ||
		!regexp.MustCompile(`logs .* 1024M `).MatchString(out) {
		t.Errorf("tenants ls with storage quotas printed\n%s", out)
	}
	if out := mustCLI(t, srv, "tenants", "set", "logs", "--max-storage", "0"); !strings.Contains(out, "max storage -") {
		t.Errorf("tenants set --max-storage 0 printed %q", out)
	}
	if _, errs, code := remoteCLI(t, srv, nil, "tenants", "set", "nope", "--max-sandboxes", "1"); code != 1 || !strings.Contains(errs, `tenant "nope" not found`) {
		t.Errorf("tenants set of an unknown tenant: exit %d, %q", code, errs)
	}
	key := strings.TrimSpace(mustCLI(t, srv, "keys", "create", "--tenant", "acme", "--name", "ci"))
	if !strings.HasPrefix(key, "alk_") {
		t.Fatalf("keys create printed %q; want the key", key)
	}
	keys, err := adminClient(srv).ListKeys(context.Background())
	var kid string
	for _, k := range keys {
		if k.Name == "ci" && k.Tenant == "acme" {
			kid = k.ID
		}
	}
	if err != nil || kid == "" {
		t.Fatalf("keys = %+v, %v; want acme's ci key", keys, err)
	}
	if out := mustCLI(t, srv, "keys", "ls"); !strings.Contains(out, kid) || !strings.Contains(out, "ci") {
		t.Errorf("keys ls printed\n%s", out)
	}
	mustCLI(t, srv, "keys", "rm", kid)
	if _, err := client.New(srv.URL, key).ListKeys(context.Background()); !errors.Is(err, client.ErrUnauthenticated) {
		t.Errorf("removed key still works: %v", err)
	}
}

// Without $AIRLOCK_API_KEY the admin key comes from the data dir,
// $AIRLOCK_DATA_DIR or its old name $AIRLOCK_STATE_DIR; without one
// either, the CLI says how to give one.
func TestRemoteAdminKeyFile(t *testing.T) {
	srv := clienttest.NewServer(t)
	for _, name := range []string{"AIRLOCK_DATA_DIR", "AIRLOCK_STATE_DIR"} {
		dir := t.TempDir()
		env := []string{"AIRLOCK_URL=" + srv.URL, "AIRLOCK_API_KEY=", "AIRLOCK_DATA_DIR=", "AIRLOCK_STATE_DIR=", name + "=" + dir}
		_, errs, code := runCLI(t, env, nil, "ls")
		want := "airlock: no API key: set AIRLOCK_API_KEY or run as root next to the server's data dir (there is no " +
			filepath.Join(dir, "admin.key") + "; set AIRLOCK_DATA_DIR to the server's --data-dir if it is elsewhere)\n"
		if code != 1 || errs != want {
			t.Errorf("%s: ls without any key: exit %d, stderr %q, want %q", name, code, errs, want)
		}
		os.WriteFile(filepath.Join(dir, "admin.key"), []byte(srv.AdminKey+"\n"), 0o600)
		if _, errs, code := runCLI(t, env, nil, "ls"); code != 0 {
			t.Errorf("%s: ls with admin.key: exit %d, stderr %q", name, code, errs)
		}
	}
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		n         int
		pos, rest []string
		flag      string
	}{
		{[]string{"-v", "x", "a", "b"}, -1, []string{"a", "b"}, nil, "x"},
		{[]string{"a", "-v", "x", "b"}, -1, []string{"a", "b"}, nil, "x"},
		{[]string{"a", "--", "-v", "b"}, -1, []string{"a", "-v", "b"}, nil, ""},
		{[]string{"id", "-v", "x", "--", "cmd", "-v"}, 1, []string{"id"}, []string{"cmd", "-v"}, "x"},
		{[]string{"id", "cmd", "-v", "y"}, 1, []string{"id"}, []string{"cmd", "-v", "y"}, ""},
		{[]string{"-v", "x", "id", "--", "cmd"}, 1, []string{"id"}, []string{"cmd"}, "x"},
		{[]string{"id"}, 1, []string{"id"}, nil, ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		v := fs.String("v", "", "")
		pos, rest, err := parseArgs(fs, tc.args, tc.n)
		if err != nil || !cmp.Equal(pos, tc.pos) || len(rest)+len(tc.rest) > 0 && !cmp.Equal(rest, tc.rest) || *v != tc.flag {
			t.Errorf("parseArgs(%q, %d) = %q, %q, %v, -v %q; want %q, %q, -v %q", tc.args, tc.n, pos, rest, err, *v, tc.pos, tc.rest, tc.flag)
		}
	}
}
