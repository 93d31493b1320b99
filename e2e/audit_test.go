package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/cast"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// auditRun is a daemon with egress through a fake internet and a secret
// bound to allowed.test, and a sandbox that has been through a scripted
// run and destroyed.
type auditRun struct {
	s      *server
	c      *client.Client
	id     string
	secret string // the secret's real value
	file   string // contents of the file uploaded
	ses    string // the session's id
	execs  []string
}

func runScripted(t *testing.T) *auditRun {
	_, s := startTrusting(t)
	c := s.admin()
	r := &auditRun{s: s, c: c, secret: "sk-REAL-" + randHex(16), file: "FILE-CONTENTS-" + randHex(16)}
	must[client.Secret](t)(c.CreateSecret(ctx, client.SecretRequest{Name: "OPENAI_API_KEY", Value: r.secret, Hosts: []string{fakenet.AllowedName}}))
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{
		Secrets: []string{"OPENAI_API_KEY"}, Network: client.AllowOnly(fakenet.AllowedName),
	}))
	r.id = sb.ID
	exec := func(cmd string, env map[string]string) client.ExecResult {
		t.Helper()
		res := must[client.ExecResult](t)(c.Exec(ctx, sb.ID, client.ExecRequest{Command: cmd, Env: env, Timeout: time.Minute}))
		r.execs = append(r.execs, res.ExecID)
		return res
	}
	// The real value reaches the sandbox only if a caller hands it in:
	// it must still not reach the log.
	if res := exec("echo hello; printenv LEAKED", map[string]string{"LEAKED": r.secret}); res.Stdout != "hello\n"+r.secret+"\n" {
		t.Fatalf("exec: %+v", res)
	}
	ses := must[client.Session](t)(c.CreateSession(ctx, sb.ID, client.SessionRequest{}))
	r.ses = ses.ID
	must[client.SessionResult](t)(c.SessionExec(ctx, sb.ID, ses.ID, "cd /tmp", time.Minute))
	if res := must[client.SessionResult](t)(c.SessionExec(ctx, sb.ID, ses.ID, "pwd", time.Minute)); res.Output != "/tmp\n" {
		t.Fatalf("session pwd: %+v", res)
	}
	must[int64](t)(c.WriteFile(ctx, sb.ID, "notes.txt", strings.NewReader(r.file), 0o644))
	var back bytes.Buffer
	must[int64](t)(c.ReadFile(ctx, sb.ID, "notes.txt", &back))
	if res := exec(`curl -sS --max-time 20 -H "Authorization: Bearer $OPENAI_API_KEY" https://allowed.test/echo`, nil); res.ExitCode != 0 {
		t.Fatalf("allowed connection: %+v", res)
	}
	if res := exec(`curl -s -o /dev/null -w '%{http_code}' --max-time 20 http://denied.test/`, nil); res.Stdout != "403" {
		t.Fatalf("denied connection: %+v", res)
	}
	// Network events are recorded when their connections end: wait for
	// both before the sandbox goes.
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := must[[]client.AuditEvent](t)(c.AuditEvents(ctx, sb.ID, client.AuditQuery{Types: []string{"net.connection"}}))
		if len(evs) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	return r
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func data(t *testing.T, e client.AuditEvent) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil {
		t.Fatalf("event %d data: %v", e.Seq, err)
	}
	return m
}

func TestAuditScriptedRun(t *testing.T) {
	r := runScripted(t)
	var raw bytes.Buffer
	events := must[[]client.AuditEvent](t)(r.c.AuditEvents(ctx, r.id, client.AuditQuery{}))
	enc := json.NewEncoder(&raw)
	for _, e := range events {
		enc.Encode(e)
	}

	// The sequence, with each run of output pieces as one (how output is
	// cut into pieces depends on timing) and the network's events apart
	// (recorded when each connection ends, so among the command's).
	var seq []string
	net := map[string]int{}
	reads := 0
	for i, e := range events {
		if e.Seq != int64(i+1) || e.Sandbox != r.id || e.Tenant == "" || e.Hash == "" || (i > 0 && e.Prev != events[i-1].Hash) {
			t.Errorf("event %d: %+v", i+1, e)
		}
		d := data(t, e)
		switch e.Type {
		case "net.connection":
			net[e.Type+" "+d["host"].(string)+" "+d["decision"].(string)]++
			continue
		case "secret.injected", "secret.misdirected":
			net[e.Type+" "+d["name"].(string)+" "+d["host"].(string)]++
			continue
		case "exec.output", "session.output":
			if len(seq) > 0 && seq[len(seq)-1] == e.Type {
				continue
			}
		case "api.request":
			if strings.HasPrefix(d["route"].(string), "GET /v1/sandboxes/{id}/audit") {
				reads++ // the test's own reads of the log, while it waits
				continue
			}
			seq = append(seq, e.Type+" "+d["route"].(string)+" "+jsonNum(d["status"]))
			continue
		}
		seq = append(seq, e.Type)
	}
	exec := []string{"exec.started", "exec.output", "exec.exited", "api.request POST /v1/sandboxes/{id}/exec 200"}
	sesExec := []string{"exec.started", "session.input", "session.output", "exec.exited", "api.request POST /v1/sandboxes/{id}/sessions/{sid}/exec 200"}
	want := slices.Concat(
		[]string{"sandbox.created"},
		exec,
		[]string{"session.created", "api.request POST /v1/sandboxes/{id}/sessions 201"},
		sesExec, sesExec,
		[]string{"file.written", "api.request PUT /v1/sandboxes/{id}/files 200"},
		[]string{"file.read", "api.request GET /v1/sandboxes/{id}/files 200"},
		exec, exec,
		[]string{"session.ended", "sandbox.destroyed", "api.request DELETE /v1/sandboxes/{id} 204"},
	)
	if reads == 0 {
		t.Error("the log does not record that it was read")
	}
	if !slices.Equal(seq, want) {
		t.Errorf("event sequence:\n got %q\nwant %q\nlog:\n%s", seq, want, raw.String())
	}
	if net["net.connection allowed.test allowed"] == 0 || net["net.connection denied.test denied"] != 1 || net["secret.injected OPENAI_API_KEY allowed.test"] != 1 {
		t.Errorf("network events: %v", net)
	}
	for k := range net {
		if !strings.Contains(k, "allowed.test") && !strings.Contains(k, "denied.test") {
			t.Errorf("unexpected network event %q", k)
		}
	}

	// What each event says.
	var firstOut string
	for _, e := range events {
		d := data(t, e)
		switch e.Type {
		case "exec.started":
			if d["exec_id"] == "" {
				t.Errorf("exec.started: %s", e.Data)
			}
			if strings.Contains(d["command"].(string), "LEAKED") && !slices.Equal(anyStrings(d["env"]), []string{"LEAKED"}) {
				t.Errorf("exec.started env names: %s", e.Data)
			}
		case "exec.output":
			// The first command's output, in as many pieces as it came.
			if id, _ := d["exec_id"].(string); id == r.execs[0] {
				firstOut += d["data"].(string)
			}
		case "exec.exited":
			for _, k := range []string{"exit_code", "signal", "timed_out", "oom_killed", "duration_ms"} {
				if _, ok := d[k]; !ok {
					t.Errorf("exec.exited without %s: %s", k, e.Data)
				}
			}
		case "file.written", "file.read":
			if d["path"] != "/home/user/notes.txt" || jsonNum(d["size"]) != jsonNum(float64(len(r.file))) || len(d["sha256"].(string)) != 64 {
				t.Errorf("%s: %s", e.Type, e.Data)
			}
		}
		if e.Actor == "" {
			t.Errorf("event %d has no actor", e.Seq)
		}
	}
	if firstOut != "hello\n[secret:OPENAI_API_KEY]\n" {
		t.Errorf("the first command's output, recorded: %q, want the secret scrubbed", firstOut)
	}
	// Never the secret's value or the file's contents; placeholders and
	// hashes only.
	for what, s := range map[string]string{"the secret's value": r.secret, "the file's contents": r.file} {
		if bytes.Contains(raw.Bytes(), []byte(s)) {
			t.Errorf("the audit log holds %s", what)
		}
		for _, f := range []string{"airlock.db", "airlock.db-wal"} {
			if b, err := os.ReadFile(filepath.Join(r.s.dataDir, f)); err == nil && bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds %s", f, what)
			}
		}
	}
	// The reads since are in it too.
	if v := must[client.AuditVerify](t)(r.c.VerifyAudit(ctx, r.id)); !v.OK || v.Events != int64(len(events))+1 {
		t.Errorf("verify: %+v", v)
	}

	// Filters.
	only := must[[]client.AuditEvent](t)(r.c.AuditEvents(ctx, r.id, client.AuditQuery{Types: []string{"exec.exited", "file.read"}}))
	if len(only) != 6 {
		t.Errorf("type filter: %d events", len(only))
	}
	mid := events[len(events)/2].Time
	if later := must[[]client.AuditEvent](t)(r.c.AuditEvents(ctx, r.id, client.AuditQuery{From: mid})); len(later) == 0 || later[0].Time.Before(mid) || len(later) >= len(events) {
		t.Errorf("time filter from %s: %d events", mid, len(later))
	}

	// Replays: the session's terminal as it showed, with what was typed;
	// a command's output, scrubbed.
	body := must[io.ReadCloser](t)(r.c.SessionCast(ctx, r.id, r.ses))
	sc, err := cast.Parse(body)
	body.Close()
	if err != nil {
		t.Fatalf("session cast: %v", err)
	}
	if out := sc.Text("o"); out != "$ cd /tmp\r\n$ pwd\r\n/tmp\r\n" {
		t.Errorf("session cast output %q", out)
	}
	if in := sc.Text("i"); in != "cd /tmp\npwd\n" {
		t.Errorf("session cast input %q", in)
	}
	body = must[io.ReadCloser](t)(r.c.AuditCast(ctx, r.id, r.execs[0]))
	ec, err := cast.Parse(body)
	body.Close()
	if err != nil || ec.Text("o") != "hello\r\n[secret:OPENAI_API_KEY]\r\n" {
		t.Errorf("exec cast: %v, output %q", err, ec.Text("o"))
	}

	tamperStore(t, r, events)
	auditCLI(t, r, events)

	// The log outlives the sandbox (deleted above) and the daemon.
	r.s.stop()
	r.s.start()
	r.c = r.s.admin()
	again := must[[]client.AuditEvent](t)(r.c.AuditEvents(ctx, r.id, client.AuditQuery{}))
	if len(again) < len(events) || again[len(events)-1].Hash != events[len(events)-1].Hash {
		t.Errorf("after a restart: %d events, want the %d read before first", len(again), len(events))
	}
	if v := must[client.AuditVerify](t)(r.c.VerifyAudit(ctx, r.id)); !v.OK {
		t.Errorf("verify after a restart: %+v", v)
	}
	// Another tenant cannot read it, nor learn it exists.
	must[client.Tenant](t)(r.c.CreateTenant(ctx, client.TenantRequest{Name: "other"}))
	other := client.New(r.s.url, must[client.NewKey](t)(r.c.CreateKey(ctx, "other", "o")).Key)
	if _, err := other.AuditEvents(ctx, r.id, client.AuditQuery{}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("another tenant reading the log: %v", err)
	}
}

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func anyStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// tamperStore changes the stored log behind the daemon's back, three ways,
// and checks verify names the first bad event each time.
func tamperStore(t *testing.T, r *auditRun, events []client.AuditEvent) {
	db, err := sql.Open("sqlite", filepath.Join(r.s.dataDir, "airlock.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	execSQL := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	check := func(what string, bad int64) {
		t.Helper()
		v := must[client.AuditVerify](t)(r.c.VerifyAudit(ctx, r.id))
		if v.OK || v.FirstBadSeq != bad {
			t.Errorf("%s: verify says %+v, want first bad %d", what, v, bad)
		}
	}
	// One byte of event 3's data.
	var orig string
	if err := db.QueryRow(`SELECT data FROM audit_events WHERE sandbox_id = ? AND seq = 3`, r.id).Scan(&orig); err != nil {
		t.Fatal(err)
	}
	flipped := []byte(orig)
	i := bytes.IndexByte(flipped, ':') + 2
	flipped[i] ^= 1
	execSQL(`UPDATE audit_events SET data = ? WHERE sandbox_id = ? AND seq = 3`, string(flipped), r.id)
	check("a byte flipped in event 3", 3)
	execSQL(`UPDATE audit_events SET data = ? WHERE sandbox_id = ? AND seq = 3`, orig, r.id)

	// Event 5 deleted.
	execSQL(`CREATE TEMP TABLE saved AS SELECT * FROM audit_events WHERE sandbox_id = ? AND seq = 5`, r.id)
	execSQL(`DELETE FROM audit_events WHERE sandbox_id = ? AND seq = 5`, r.id)
	check("event 5 deleted", 5)
	execSQL(`INSERT INTO audit_events SELECT * FROM saved`)

	// Events 6 and 7 swapped.
	swap := func() {
		execSQL(`UPDATE audit_events SET seq = -1 WHERE sandbox_id = ? AND seq = 6`, r.id)
		execSQL(`UPDATE audit_events SET seq = 6 WHERE sandbox_id = ? AND seq = 7`, r.id)
		execSQL(`UPDATE audit_events SET seq = 7 WHERE sandbox_id = ? AND seq = -1`, r.id)
	}
	swap()
	check("events 6 and 7 swapped", 6)
	swap()

	// The newest event dropped: only the head shows it.
	n := int64(len(events))
	execSQL(`CREATE TEMP TABLE last AS SELECT * FROM audit_events WHERE sandbox_id = ? AND seq = ?`, r.id, n)
	execSQL(`DELETE FROM audit_events WHERE sandbox_id = ? AND seq = ?`, r.id, n)
	check("the newest event deleted", n)
	execSQL(`INSERT INTO audit_events SELECT * FROM last`)

	if v := must[client.AuditVerify](t)(r.c.VerifyAudit(ctx, r.id)); !v.OK {
		t.Fatalf("verify after the store was put back: %+v", v)
	}
}

// auditCLI reads, verifies and exports the log with the airlock binary,
// then checks the export offline, intact and tampered with.
func auditCLI(t *testing.T, r *auditRun, events []client.AuditEvent) {
	cli := func(args ...string) (string, int) { return r.s.cli(r.s.adminKey, args...) }
	if out, code := cli("audit", r.id, "--type", "file.written"); code != 0 || strings.Count(out, "file.written") != 1 || !strings.Contains(out, "notes.txt") {
		t.Errorf("airlock audit --type file.written: exit %d\n%s", code, out)
	}
	if out, code := cli("audit", "verify", r.id); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("airlock audit verify ID: exit %d\n%s", code, out)
	}
	file := filepath.Join(t.TempDir(), "run.tar.gz")
	if out, code := cli("audit", "export", r.id, "-o", file); code != 0 {
		t.Fatalf("airlock audit export: exit %d\n%s", code, out)
	}
	keyOut, code := cli("audit", "key")
	fp := strings.Fields(keyOut)
	if code != 0 || len(fp) == 0 || !strings.HasPrefix(fp[0], "SHA256:") {
		t.Fatalf("airlock audit key: exit %d\n%s", code, keyOut)
	}
	if out, code := cli("audit", "verify", "--key", fp[0], file); code != 0 || !strings.Contains(out, "ok") || !strings.Contains(out, "signed by "+fp[0]) {
		t.Errorf("airlock audit verify --key FP FILE: exit %d\n%s", code, out)
	}
	if out, code := cli("audit", "verify", "--key", "SHA256:someone-else", file); code != 1 || !strings.Contains(out, "not by SHA256:someone-else") {
		t.Errorf("airlock audit verify with another key: exit %d\n%s", code, out)
	}
	files := readTarGz(t, file)
	for _, name := range []string{"manifest.json", "events.jsonl"} {
		if _, ok := files[name]; !ok {
			t.Errorf("the export has no %s", name)
		}
	}
	casts := 0
	for name, b := range files {
		if strings.HasPrefix(name, "casts/") && strings.HasSuffix(name, ".cast") {
			casts++
		}
		if bytes.Contains(b, []byte(r.secret)) || bytes.Contains(b, []byte(r.file)) {
			t.Errorf("the export's %s holds the secret or the file's contents", name)
		}
	}
	if casts != 4 { // one session, three commands
		t.Errorf("the export has %d casts, want 4", casts)
	}
	// Event 4 changed inside the archive.
	lines := strings.Split(string(files["events.jsonl"]), "\n")
	lines[3] = strings.Replace(lines[3], `"seq":4`, `"seq":4 `, 1)
	lines[3] = strings.Replace(lines[3], `"actor":"`, `"actor":"x`, 1)
	files["events.jsonl"] = []byte(strings.Join(lines, "\n"))
	bad := filepath.Join(t.TempDir(), "bad.tar.gz")
	writeTarGz(t, bad, files)
	if out, code := cli("audit", "verify", bad); code == 0 || !strings.Contains(out, "first bad event 4 ") {
		t.Errorf("airlock audit verify of a changed export: exit %d\n%s", code, out)
	}
}

func readTarGz(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[hdr.Name], _ = io.ReadAll(tr)
	}
}

func writeTarGz(t *testing.T, path string, files map[string][]byte) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := []string{"manifest.json"}
	for name := range files {
		if name != "manifest.json" {
			names = append(names, name)
		}
	}
	for _, name := range names {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg})
		tw.Write(files[name])
	}
	tw.Close()
	gz.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
