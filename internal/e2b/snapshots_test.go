package e2b

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Snapshots as the SDK makes, lists, uses and deletes them: a snapshot's
// id names it as a template to create from.
func TestSnapshots(t *testing.T) {
	e := newEnvd(t)
	e.writeFile("/home/user/state.json", `{"step":1}`)
	var info snapshotInfo
	if st := e.api("POST", "/sandboxes/"+e.id+"/snapshots", `{"name":"step1"}`, &info); st != 201 {
		t.Fatalf("createSnapshot: %d", st)
	}
	if d := cmp.Diff(snapshotInfo{SnapshotID: "step1", Names: []string{"step1"}}, info); d != "" {
		t.Errorf("createSnapshot (-want +got):\n%s", d)
	}
	var ae apiError
	if st := e.api("POST", "/sandboxes/"+e.id+"/snapshots", `{"name":"step1"}`, &ae); st != 409 || !strings.Contains(ae.Message, "delete it first") {
		t.Errorf("a second snapshot named step1: %d %+v", st, ae)
	}
	var unnamed snapshotInfo
	if st := e.api("POST", "/sandboxes/"+e.id+"/snapshots", `{}`, &unnamed); st != 201 || unnamed.SnapshotID == "" {
		t.Errorf("unnamed snapshot: %d %+v", st, unnamed)
	}
	if st := e.api("POST", "/sandboxes/sb-none/snapshots", `{}`, &ae); st != 404 {
		t.Errorf("snapshot of no sandbox: %d", st)
	}

	var other sandboxBody
	e.api("POST", "/sandboxes", `{}`, &other)
	e.api("POST", "/sandboxes/"+other.SandboxID+"/snapshots", `{"name":"zother"}`, nil)
	ids := func(q string) ([]string, string) {
		t.Helper()
		var out []snapshotInfo
		resp := e.call("GET", "/snapshots?"+q, http.Header{"X-Api-Key": {e.key}}, nil, &out)
		if resp.StatusCode != 200 {
			t.Fatalf("list ?%s: %d", q, resp.StatusCode)
		}
		var got []string
		for _, s := range out {
			got = append(got, s.SnapshotID)
		}
		return got, resp.Header.Get("X-Next-Token")
	}
	mine := []string{unnamed.SnapshotID, "step1"} // by name
	if got, _ := ids("sandboxID=" + e.id); !cmp.Equal(mine, got) {
		t.Errorf("snapshots of %s: %v, want %v", e.id, got, mine)
	}
	if got, _ := ids("name=zother"); !cmp.Equal([]string{"zother"}, got) {
		t.Errorf("snapshots named zother: %v", got)
	}
	got, next := ids("limit=2")
	rest, last := ids("limit=2&nextToken=" + next)
	if all := append(got, rest...); !cmp.Equal(append(mine, "zother"), all) || next == "" || last != "" {
		t.Errorf("paged snapshots: %v then %v (next %q, %q)", got, rest, next, last)
	}

	// Sandbox.create(snapshotId) starts from the snapshot's files.
	var from sandboxBody
	if st := e.api("POST", "/v2/sandboxes", `{"templateID":"step1","timeout":60}`, &from); st != 201 || from.TemplateID != "step1" {
		t.Fatalf("create from step1: %d %+v", st, from)
	}
	fe := &envd{facade: e.facade, id: from.SandboxID, token: from.EnvdAccessToken}
	if st, body := fe.readFile("state.json"); st != 200 || body != `{"step":1}` {
		t.Errorf("the snapshot's file in the new sandbox: %d %q", st, body)
	}
	if got := fe.get(); got.TemplateID != "step1" {
		t.Errorf("getInfo of the sandbox from step1: template %q", got.TemplateID)
	}

	// Sandbox.deleteSnapshot is DELETE /templates/{id}: 404 makes it false.
	if st := e.api("DELETE", "/templates/step1", "", nil); st != 204 {
		t.Errorf("deleteSnapshot: %d", st)
	}
	if st := e.api("DELETE", "/templates/step1", "", &ae); st != 404 || ae.Code != 404 {
		t.Errorf("deleteSnapshot again: %d %+v", st, ae)
	}
	if st := e.api("POST", "/v2/sandboxes", `{"templateID":"step1"}`, &ae); st != 404 || !strings.Contains(ae.Message, "template 'step1' not found") {
		t.Errorf("create from the deleted snapshot: %d %+v", st, ae)
	}
	// The sandbox made from it keeps its copy.
	if st, body := fe.readFile("state.json"); st != 200 || body != `{"step":1}` {
		t.Errorf("the file after the snapshot's deletion: %d %q", st, body)
	}
}

// Sandbox.fork: forks with the sandbox's files, each with its own token.
func TestFork(t *testing.T) {
	e := newEnvd(t)
	e.writeFile("f.txt", "forked")
	var out []forkResult
	if st := e.api("POST", "/sandboxes/"+e.id+"/fork", `{"count":2,"timeout":60}`, &out); st != 201 || len(out) != 2 {
		t.Fatalf("fork: %d %+v", st, out)
	}
	seen := map[string]bool{e.id: true}
	for _, r := range out {
		if r.Error != nil || r.Sandbox == nil || r.Sandbox.EnvdAccessToken == "" || seen[r.Sandbox.SandboxID] {
			t.Fatalf("fork result %+v", r)
		}
		seen[r.Sandbox.SandboxID] = true
		fe := &envd{facade: e.facade, id: r.Sandbox.SandboxID, token: r.Sandbox.EnvdAccessToken}
		if st, body := fe.readFile("f.txt"); st != 200 || body != "forked" {
			t.Errorf("file in fork %s: %d %q", fe.id, st, body)
		}
		endsIn(t, fe.get(), 60*time.Second)
	}
	var ae apiError
	for _, tc := range []struct {
		path, body string
		want       int
	}{
		{"/sandboxes/sb-none/fork", `{}`, 404},
		{"/sandboxes/" + e.id + "/fork", `{"count":0}`, 400},
		{"/sandboxes/" + e.id + "/fork", `{"timeout":-1}`, 400},
	} {
		if st := e.api("POST", tc.path, tc.body, &ae); st != tc.want {
			t.Errorf("POST %s %s: %d %+v, want %d", tc.path, tc.body, st, ae, tc.want)
		}
	}
}
