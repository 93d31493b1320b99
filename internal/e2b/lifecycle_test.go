package e2b

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// readFile reads path through envd with the caller's token: the status
// and the body.
func (e *envd) readFile(path string) (int, string) {
	e.t.Helper()
	resp, err := http.DefaultClient.Do(mustReq(e.t, "GET", e.url+"/envd/files?path="+path, e.header()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (e *envd) writeFile(path, data string) {
	e.t.Helper()
	hdr := e.header()
	hdr.Set("Content-Type", "application/octet-stream")
	if resp := e.call("POST", "/envd/files?path="+path, hdr, strings.NewReader(data), nil); resp.StatusCode != 200 {
		e.t.Fatalf("write %s: %d", path, resp.StatusCode)
	}
}

func (e *envd) get() sandboxBody {
	e.t.Helper()
	var got sandboxBody
	if st := e.api("GET", "/sandboxes/"+e.id, "", &got); st != 200 {
		e.t.Fatalf("get %s: %d", e.id, st)
	}
	return got
}

// endsIn checks that the sandbox ends about d from now.
func endsIn(t *testing.T, b sandboxBody, d time.Duration) {
	t.Helper()
	end, err := time.Parse(time.RFC3339Nano, b.EndAt)
	if left := time.Until(end); err != nil || left < d-5*time.Second || left > d+time.Second {
		t.Errorf("endAt %s is %v away, want about %v", b.EndAt, time.Until(end), d)
	}
}

func TestPauseAndConnect(t *testing.T) {
	e := newEnvd(t)
	e.writeFile("/tmp/kept", "before the pause")
	var ae apiError
	if st := e.api("POST", "/sandboxes/"+e.id+"/pause", `{"memory":false}`, &ae); st != 400 || !strings.Contains(ae.Message, "memory: false") {
		t.Errorf("pause keeping files only: %d %+v, want 400", st, ae)
	}
	if st := e.api("POST", "/sandboxes/"+e.id+"/pause", `{}`, nil); st != 204 {
		t.Fatalf("pause: %d, want 204", st)
	}
	got := e.get()
	if got.State != "paused" || got.Lifecycle == nil || got.Lifecycle.OnTimeout != "kill" || got.Lifecycle.AutoResume {
		t.Errorf("paused sandbox: state %q, lifecycle %+v", got.State, got.Lifecycle)
	}
	if st := e.api("POST", "/sandboxes/"+e.id+"/pause", "", &ae); st != 409 || ae.Code != 409 {
		t.Errorf("second pause: %d %+v, want E2B's 409 (the SDK's pause() returns false)", st, ae)
	}

	// While paused: the files are out of reach, and isRunning is false.
	if st, body := e.readFile("/tmp/kept"); st != 409 || !strings.Contains(body, "paused") {
		t.Errorf("read while paused: %d %s, want 409", st, body)
	}
	var rerr rpcError
	if st := e.unary("filesystem.Filesystem/Stat", pathRequest{Path: "/tmp/kept"}, &rerr); rerr.Code != codeFailedPrecondition {
		t.Errorf("Stat while paused: %d %+v, want failed_precondition", st, rerr)
	}
	if resp := e.call("GET", "/envd/health", e.header(), nil, nil); resp.StatusCode != 502 {
		t.Errorf("health while paused: %d, want 502", resp.StatusCode)
	}
	if st := e.api("POST", "/sandboxes/"+e.id+"/timeout", `{"timeout":60}`, &ae); st != 409 {
		t.Errorf("setTimeout while paused: %d %+v, want 409", st, ae)
	}
	if st := e.api("POST", "/v2/sandboxes/"+e.id+"/connect", `{"timeout":60,"memory":false}`, &ae); st != 400 {
		t.Errorf("connect with onResume reboot: %d %+v, want 400", st, ae)
	}

	// connect resumes (201), with a fresh token; the files are there.
	var conn sandboxBody
	if st := e.api("POST", "/v2/sandboxes/"+e.id+"/connect", `{"timeout":600}`, &conn); st != 201 || conn.EnvdAccessToken == "" || conn.EnvdAccessToken == e.token {
		t.Fatalf("connect to the paused sandbox: %d %+v, want 201 with a new token", st, conn)
	}
	e.token = conn.EnvdAccessToken
	if st, body := e.readFile("/tmp/kept"); st != 200 || body != "before the pause" {
		t.Errorf("read after connect: %d %q", st, body)
	}
	got = e.get()
	if got.State != "running" {
		t.Errorf("state after connect: %q", got.State)
	}
	endsIn(t, got, 600*time.Second)
	// Connecting to a running sandbox is 200, and never shortens its life.
	if st := e.api("POST", "/v2/sandboxes/"+e.id+"/connect", `{}`, &conn); st != 200 {
		t.Errorf("connect to the running sandbox: %d", st)
	}
	endsIn(t, e.get(), 600*time.Second)
	if st := e.api("POST", "/sandboxes/"+e.id+"/resume", `{}`, &ae); st != 409 {
		t.Errorf("resume of a running sandbox: %d %+v, want 409", st, ae)
	}
}

// v2 connect without a timeout makes the sandbox live at least 300 s, as
// E2B's (whose body defaults it); v1's timeout is the caller's to give.
func TestConnectDefaultTimeout(t *testing.T) {
	f := newFacade(t)
	var sb sandboxBody
	f.api("POST", "/sandboxes", `{"timeout":60}`, &sb)
	e := &envd{facade: f, id: sb.SandboxID, token: sb.EnvdAccessToken}
	if st := f.api("POST", "/sandboxes/"+e.id+"/connect", `{}`, nil); st != 200 {
		t.Fatalf("v1 connect: %d", st)
	}
	endsIn(t, e.get(), 60*time.Second)
	if st := f.api("POST", "/v2/sandboxes/"+e.id+"/connect", "", nil); st != 200 {
		t.Fatalf("v2 connect: %d", st)
	}
	endsIn(t, e.get(), 300*time.Second)
}

// The deprecated resume route (e2b 1.x's Sandbox.resume): 201, and a
// timeout sets the sandbox's life from now.
func TestResume(t *testing.T) {
	e := newEnvd(t)
	e.api("POST", "/sandboxes/"+e.id+"/pause", "", nil)
	var ae apiError
	if st := e.api("POST", "/sandboxes/"+e.id+"/resume", `{"timeout":100,"autoPause":true}`, &ae); st != 400 || !strings.Contains(ae.Message, "autoPause") {
		t.Errorf("resume with autoPause: %d %+v, want 400", st, ae)
	}
	var sb sandboxBody
	if st := e.api("POST", "/sandboxes/"+e.id+"/resume", `{"timeout":100}`, &sb); st != 201 || sb.SandboxID != e.id || sb.EnvdAccessToken == "" {
		t.Fatalf("resume: %d %+v", st, sb)
	}
	got := e.get()
	if got.State != "running" {
		t.Errorf("state after resume: %q", got.State)
	}
	endsIn(t, got, 100*time.Second)
	for _, path := range []string{"/sandboxes/sb-none/pause", "/sandboxes/sb-none/resume", "/v2/sandboxes/sb-none/connect"} {
		if st := e.api("POST", path, `{}`, &ae); st != 404 || ae.Code != 404 {
			t.Errorf("POST %s: %d %+v, want 404", path, st, ae)
		}
	}
	// A paused sandbox can be killed.
	e.api("POST", "/sandboxes/"+e.id+"/pause", "", nil)
	if st := e.api("DELETE", "/sandboxes/"+e.id, "", nil); st != 204 {
		t.Errorf("kill of a paused sandbox: %d", st)
	}
}

// autoResume {enabled: true} is Airlock's auto_resume: envd calls on the
// paused sandbox resume it.
func TestAutoResume(t *testing.T) {
	f := newFacade(t)
	var sb sandboxBody
	if st := f.api("POST", "/v2/sandboxes", `{"templateID":"base","autoPause":false,"autoResume":{"enabled":true}}`, &sb); st != 201 {
		t.Fatalf("create: %d", st)
	}
	e := &envd{facade: f, id: sb.SandboxID, token: sb.EnvdAccessToken}
	e.writeFile("note", "hi")
	if got := e.get(); got.Lifecycle == nil || !got.Lifecycle.AutoResume {
		t.Errorf("lifecycle %+v, want autoResume", got.Lifecycle)
	}
	e.api("POST", "/sandboxes/"+e.id+"/pause", "", nil)
	if st, body := e.readFile("note"); st != 200 || body != "hi" {
		t.Errorf("read of the paused auto-resume sandbox: %d %q", st, body)
	}
	if got := e.get(); got.State != "running" {
		t.Errorf("state after the read: %q, want running", got.State)
	}
	var ae apiError
	if st := f.api("POST", "/v2/sandboxes", `{"templateID":"base","autoPause":true,"autoResume":{"enabled":true}}`, &ae); st != 400 || !strings.Contains(ae.Message, "destroyed when its timeout is reached") {
		t.Errorf("create with autoPause: %d %+v, want 400 saying why", st, ae)
	}
}

// The list shows running and paused sandboxes, by state, in pages that
// run from one state into the next.
func TestListStates(t *testing.T) {
	f := newFacade(t)
	var ids []string
	for range 3 {
		var sb sandboxBody
		f.api("POST", "/sandboxes", `{"metadata":{"suite":"list"}}`, &sb)
		ids = append(ids, sb.SandboxID)
	}
	for _, id := range ids[1:] {
		f.api("POST", "/sandboxes/"+id+"/pause", "", nil)
	}
	list := func(q string) ([]string, string) {
		t.Helper()
		var out []sandboxBody
		resp := f.call("GET", "/v2/sandboxes?"+q, http.Header{"X-Api-Key": {f.key}}, nil, &out)
		if resp.StatusCode != 200 {
			t.Fatalf("list ?%s: %d", q, resp.StatusCode)
		}
		var got []string
		for _, b := range out {
			got = append(got, b.SandboxID+" "+b.State)
		}
		return got, resp.Header.Get("X-Next-Token")
	}
	running, paused := []string{ids[0] + " running"}, []string{ids[1] + " paused", ids[2] + " paused"}
	for q, want := range map[string][]string{
		"":                           append(running, paused...),
		"state=running":              running,
		"state=paused":               paused,
		"state=running&state=paused": append(running, paused...),
		"state=paused,running&metadata=suite%3Dlist": append(running, paused...),
	} {
		if got, next := list(q); !cmp.Equal(want, got) || next != "" {
			t.Errorf("list ?%s = %v, next %q; want %v", q, got, next, want)
		}
	}
	var all []string
	q := "limit=2"
	for range 5 {
		got, next := list(q)
		all = append(all, got...)
		if next == "" {
			break
		}
		q = "limit=2&nextToken=" + next
	}
	if d := cmp.Diff(append(running, paused...), all); d != "" {
		t.Errorf("paged list (-want +got):\n%s", d)
	}
	var ae apiError
	for _, q := range []string{"state=stopped", "nextToken=bogus", "state=running&nextToken=paused/x"} {
		if st := f.api("GET", "/v2/sandboxes?"+q, "", &ae); st != 400 {
			t.Errorf("list ?%s: %d %+v, want 400", q, st, ae)
		}
	}
}

// The list's state filter and nextToken are outside input: whatever
// they hold, the facade lists only running and paused sandboxes, and a
// token it accepts points into the listing.
func FuzzListQuery(f *testing.F) {
	f.Add("running,paused", "paused/sb-1")
	f.Add("paused", "running/")
	f.Add(",", "/")
	f.Fuzz(func(t *testing.T, state, tok string) {
		states, err := parseStates([]string{state})
		if err != nil {
			return
		}
		if len(states) == 0 || len(states) > 2 {
			t.Fatalf("parseStates(%q) = %v", state, states)
		}
		for _, s := range states {
			if s != "running" && s != "paused" {
				t.Fatalf("parseStates(%q) = %v", state, states)
			}
		}
		i, cursor, err := parseListToken(tok, states)
		if err == nil && (i < 0 || i >= len(states) || tok != "" && tok != states[i]+"/"+cursor) {
			t.Fatalf("parseListToken(%q, %v) = %d, %q", tok, states, i, cursor)
		}
	})
}
