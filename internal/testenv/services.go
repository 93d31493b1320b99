package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The suite's services: gotest starts a throwaway PostgreSQL and
// kube-apiserver with ../shared/tools (SharedTools) and passes them on in
// these variables, as .ci/run and a developer's shell may too.
const (
	DatabaseURLEnv = "AIRLOCK_TEST_DATABASE_URL"
	KubeconfigEnv  = "AIRLOCK_TEST_KUBECONFIG"
)

// SharedTools is the directory of kube-env.sh and pg-env.sh: $AIRLOCK_SHARED_TOOLS,
// else ../shared/tools beside the repository. "" when there is none.
func SharedTools() string {
	if d := os.Getenv("AIRLOCK_SHARED_TOOLS"); d != "" {
		return d
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	// file is <repo>/internal/testenv/services.go.
	d := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "tools")
	if _, err := os.Stat(filepath.Join(d, "pg-env.sh")); err != nil {
		return ""
	}
	return filepath.Clean(d)
}

// KubeEnvScript is the repository's tools/kube-env.sh: the shared one with
// privileged pods allowed (see its header).
func KubeEnvScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "tools", "kube-env.sh")
}

// PostgresURL returns the URL of the suite's PostgreSQL server (a database
// any test may use), or skips (in CI, fails) t when there is none.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(DatabaseURLEnv)
	if u == "" {
		Lacking(t, "no PostgreSQL: run the suite with gotest (it starts one with ../shared/tools/pg-env.sh) or set "+DatabaseURLEnv)
	}
	return u
}

// NewDatabase creates an empty database of its own for t on the suite's
// PostgreSQL server, dropped when t ends, and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base := PostgresURL(t)
	name, u, err := CreateDatabase(base, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := DropDatabase(base, name); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	return u
}

// CreateDatabase creates a database named prefix_<random> on the server
// at base, a copy of template when that is not "", and returns its name
// and URL.
func CreateDatabase(base, prefix, template string) (name, dbURL string, err error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", "", fmt.Errorf("parse %s: %w", DatabaseURLEnv, err)
	}
	name = prefix + "_" + randHex(6)
	sql := "CREATE DATABASE " + name
	if template != "" {
		sql += " TEMPLATE " + template
	}
	for try := 0; ; try++ {
		err = PostgresExec(base, sql)
		// 55006: another session is connected to the template (a copy
		// would not be consistent); one that is ending leaves soon.
		if pe := (*pgconn.PgError)(nil); template != "" && try < 20 && errors.As(err, &pe) && pe.Code == "55006" {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		break
	}
	if err != nil {
		return "", "", fmt.Errorf("create database %s: %w", name, err)
	}
	u.Path = "/" + name
	return name, u.String(), nil
}

// randHex returns n random bytes in hex: names that tests running at once
// on one server never share.
func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// DropDatabase drops database name of the server at base. A plain DROP
// first: it ends an autovacuum worker on the database itself, where DROP
// ... WITH (FORCE) refuses a role without pg_signal_backend (SQLSTATE
// 42501: the worker is no role's); FORCE only when sessions are still
// connected (55006), as a test that failed may leave them.
func DropDatabase(base, name string) error {
	err := PostgresExec(base, "DROP DATABASE IF EXISTS "+name)
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "55006" {
		err = PostgresExec(base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return err
}

// PostgresExec runs one statement on the server at base, on a connection
// of its own (CREATE and DROP DATABASE run outside a transaction).
func PostgresExec(base, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// Kubeconfig returns the path of a kubeconfig for the suite's
// kube-apiserver (admin), or skips (in CI, fails) t when there is none.
func Kubeconfig(t testing.TB) string {
	t.Helper()
	k := os.Getenv(KubeconfigEnv)
	if k == "" {
		Lacking(t, "no kube-apiserver: run the suite with gotest (it starts one with ../shared/tools/kube-env.sh) or set "+KubeconfigEnv)
	}
	return k
}

// NewNamespaceName returns a name for a namespace of t's own (the test
// creates it; nothing collects namespaces on the suite's API server).
func NewNamespaceName(prefix string) string {
	return strings.ToLower(prefix) + "-" + randHex(4)
}

// Postgres is a PostgreSQL server of one test's own, for tests that stop
// or restart it (the suite's shared one serves other packages meanwhile).
type Postgres struct {
	URL  string // postgres://... of its database
	data string
	dir  string
}

// StartPostgres starts a PostgreSQL server for t alone with
// ../shared/tools/pg-env.sh and stops it when t ends; it skips (in CI,
// fails) t when the tools are missing.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	tools := SharedTools()
	if tools == "" {
		Lacking(t, "no ../shared/tools/pg-env.sh to start a PostgreSQL server of the test's own")
	}
	RequiresRoot(t, "start a PostgreSQL server as user postgres")
	// Under /tmp: user postgres must reach it (not a 0700 t.TempDir).
	p := &Postgres{dir: "/tmp/airlock-pg-" + randHex(4)}
	script := filepath.Join(tools, "pg-env.sh")
	out, err := exec.Command("bash", script, "up", p.dir).CombinedOutput()
	t.Cleanup(func() { exec.Command("bash", script, "down", p.dir).Run() })
	if err != nil {
		t.Fatalf("pg-env.sh up: %v\n%s", err, out)
	}
	env, err := os.ReadFile(filepath.Join(p.dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(env), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "DATABASE_URL":
			p.URL = v
		case "PG_ENV_DATA":
			p.data = v
		}
	}
	if p.URL == "" || p.data == "" {
		t.Fatalf("pg-env.sh wrote no DATABASE_URL or PG_ENV_DATA:\n%s", env)
	}
	return p
}

// Restart restarts the server on the same port: with crash, as after a
// crash (immediate: no checkpoint, clients cut), else a fast shutdown.
func (p *Postgres) Restart(t testing.TB, crash bool) {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		t.Fatal("no /usr/lib/postgresql/*/bin/pg_ctl")
	}
	mode := "fast"
	if crash {
		mode = "immediate"
	}
	// -l: the new postmaster writes to the log, not to our pipe, which
	// it would otherwise hold open and CombinedOutput wait on forever.
	cmd := exec.Command("runuser", "-u", "postgres", "--", bins[len(bins)-1], "restart", "-D", p.data, "-m", mode, "-w", "-t", "60",
		"-l", filepath.Join(p.dir, "logs", "postgres.log"))
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl restart: %v\n%s", err, out)
	}
}
