package e2b

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/client"
)

const testImage = "127.0.0.1:5000/test/img:latest"

// status polls a build once from log entry offset.
func (f *facade) status(a templateAnswer, offset int) buildInfo {
	f.t.Helper()
	var info buildInfo
	if st := f.api("GET", fmt.Sprintf("/templates/%s/builds/%s/status?logsOffset=%d", a.TemplateID, a.BuildID, offset), "", &info); st != 200 {
		f.t.Fatalf("status of %s: %d", a.BuildID, st)
	}
	return info
}

// waitStatus polls until the build's status is want, collecting its log
// as the SDK does (logsOffset the entries it has).
func (f *facade) waitStatus(a templateAnswer, want string, log *[]buildLogEntry) buildInfo {
	f.t.Helper()
	for range 500 {
		info := f.status(a, len(*log))
		*log = append(*log, info.LogEntries...)
		if info.Status == want {
			return info
		}
		if info.Status == "ready" || info.Status == "error" {
			f.t.Fatalf("build ended %s, want %s: %+v", info.Status, want, info)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.t.Fatalf("build %s never got to %s", a.BuildID, want)
	return buildInfo{}
}

// Template().fromImage(ref) and Template.build: the build waits for its
// trigger, imports while the SDK polls (its log growing by layer), ends
// ready, and a sandbox starts from the template.
func TestTemplateBuildFromImage(t *testing.T) {
	f := newFacade(t)
	hold := make(chan struct{})
	f.fake.AddImage(testImage, hold)
	var a templateAnswer
	if st := f.api("POST", "/v3/templates", `{"name":"img"}`, &a); st != 202 || a.TemplateID != "img" || a.BuildID == "" || len(a.Names) != 1 || a.Names[0] != "img" {
		t.Fatalf("request build: %d %+v", st, a)
	}
	if info := f.status(a, 0); info.Status != "waiting" || info.Logs == nil || info.LogEntries == nil {
		t.Errorf("before the trigger: %+v, want waiting (and empty lists, not null)", info)
	}
	trigger := fmt.Sprintf("/v2/templates/img/builds/%s", a.BuildID)
	if st := f.api("POST", trigger, `{"fromImage":"`+testImage+`","steps":[],"force":false}`, nil); st != 202 {
		t.Fatalf("trigger: %d", st)
	}
	var ae apiError
	if st := f.api("POST", trigger, `{"fromImage":"`+testImage+`"}`, &ae); st != 409 {
		t.Errorf("second trigger: %d %+v, want 409", st, ae)
	}
	var log []buildLogEntry
	f.waitStatus(a, "building", &log)
	close(hold)
	f.waitStatus(a, "ready", &log)
	var msgs []string
	for _, e := range log {
		msgs = append(msgs, e.Level+" "+e.Message)
	}
	got := strings.Join(msgs, "\n")
	for _, want := range []string{"info importing image " + testImage + " into template img", "layer 1/2", "layer 2/2 done", "info template img ready: " + testImage + "@sha256:"} {
		if !strings.Contains(got, want) {
			t.Errorf("build log lacks %q:\n%s", want, got)
		}
	}
	if tail := f.status(a, len(log)); len(tail.LogEntries) != 0 {
		t.Errorf("entries past the offset of all of them: %+v", tail.LogEntries)
	}

	tmpl, err := client.New(f.fake.URL, f.key).Template(t.Context(), "img")
	if err != nil || tmpl.From != "image" || tmpl.Image != testImage {
		t.Errorf("Airlock's template img: %+v %v", tmpl, err)
	}
	var sb sandboxBody
	if st := f.api("POST", "/v2/sandboxes", `{"templateID":"img"}`, &sb); st != 201 || sb.TemplateID != "img" {
		t.Errorf("a sandbox from the built template: %d %+v", st, sb)
	}
	var alias struct {
		TemplateID string `json:"templateID"`
		Public     bool   `json:"public"`
	}
	if st := f.api("GET", "/templates/aliases/img", "", &alias); st != 200 || alias.TemplateID != "img" {
		t.Errorf("Template.exists(img): %d %+v", st, alias)
	}
	if st := f.api("GET", "/templates/aliases/nope", "", &ae); st != 404 {
		t.Errorf("Template.exists(nope): %d %+v, want 404 (false)", st, ae)
	}

	// Built again (E2B's rebuild of a name): the image template is
	// replaced; a template that is not an image's is not.
	if st := f.api("POST", "/v3/templates", `{"name":"img"}`, &a); st != 202 {
		t.Errorf("rebuild of an image template: %d", st)
	}
	if st := f.api("POST", "/v3/templates", `{"name":"python"}`, &ae); st != 409 || !strings.Contains(ae.Message, "not imported from an image") {
		t.Errorf("build over a built template: %d %+v, want 409", st, ae)
	}
}

// What a build cannot be is refused with 400 where the SDK sends it, and
// a refused trigger ends the build with the reason.
func TestTemplateBuildRefusals(t *testing.T) {
	f := newFacade(t)
	for _, tc := range []struct{ body, msg string }{
		{`{"name":"img:v1"}`, "tags are not supported"},
		{`{"name":"img","tags":["prod"]}`, "tags are not supported"},
		{`{"name":"img","cpuCount":2}`, "cpuCount, memoryMB and minFreeDiskMb"},
		{`{}`, "needs a name"},
	} {
		var ae apiError
		if st := f.api("POST", "/v3/templates", tc.body, &ae); st != 400 || !strings.Contains(ae.Message, tc.msg) {
			t.Errorf("request build %s: %d %+v, want 400 with %q", tc.body, st, ae, tc.msg)
		}
	}
	var ae apiError
	if st := f.api("GET", "/templates/img/files/abc123", "", &ae); st != 400 || !strings.Contains(ae.Message, "COPY") {
		t.Errorf("a COPY step's upload link: %d %+v, want 400", st, ae)
	}

	var a templateAnswer
	f.api("POST", "/v3/templates", `{"name":"img"}`, &a)
	body := `{"fromImage":"ubuntu:22.04","steps":[{"type":"RUN","args":["apt-get update"]},{"type":"ENV","args":["A","1"]}]}`
	if st := f.api("POST", "/v2/templates/img/builds/"+a.BuildID, body, &ae); st != 400 || !strings.Contains(ae.Message, "steps (RUN, ENV)") {
		t.Errorf("trigger with steps: %d %+v, want 400", st, ae)
	}
	info := f.status(a, 0)
	if info.Status != "error" || info.Reason == nil || !strings.Contains(info.Reason.Message, "steps (RUN, ENV)") {
		t.Errorf("status of the refused build: %+v", info)
	}

	// An image the registry lacks: the import's error is the build's.
	f.api("POST", "/v3/templates", `{"name":"img"}`, &a)
	if st := f.api("POST", "/v2/templates/img/builds/"+a.BuildID, `{"fromImage":"127.0.0.1:5000/none:latest"}`, nil); st != 202 {
		t.Fatalf("trigger: %d", st)
	}
	var log []buildLogEntry
	info = f.waitStatus(a, "error", &log)
	if info.Reason == nil || !strings.Contains(info.Reason.Message, "manifest unknown") || log[len(log)-1].Level != "error" {
		t.Errorf("a build of a missing image: %+v, log %+v", info, log)
	}
}

func TestImportRequest(t *testing.T) {
	for _, tc := range []struct {
		body, err string
		insecure  bool
	}{
		{body: `{"fromImage":"ubuntu:22.04","steps":[],"force":true}`},
		{body: `{"fromImage":"127.0.0.1:5000/x/y:z"}`, insecure: true},
		{body: `{"fromImage":"localhost:5000/x"}`, insecure: true},
		{body: `{"fromImage":"[::1]:5000/x"}`, insecure: true},
		{body: `{"fromImage":"10.0.0.1:5000/x"}`},
		{body: `{"fromImage":"registry.example.com/127.0.0.1"}`},
		{body: `{"fromTemplate":"base"}`, err: "fromTemplate is not supported"},
		{body: `{}`, err: "fromImage is required"},
		{body: `{"fromImage":"x","fromImageRegistry":{"type":"registry","username":"u","password":"p"}}`, err: "registry credentials"},
		{body: `{"fromImage":"x","fromImageRegistry":{"type":"aws"}}`, err: "registry credentials"},
		{body: `{"fromImage":"x","steps":[{"type":"COPY","args":["a","/a"]}]}`, err: "steps (COPY)"},
		{body: `{"fromImage":"x","readyCmd":"sleep 1"}`, err: "readyCmd without startCmd"},
		{body: `{"fromImage":"x","steps":[{"type":"RUN"}],"startCmd":"python app.py"}`, err: "steps (RUN)"},
		{body: `{"fromTemplate":"base","startCmd":"python app.py"}`, err: "fromTemplate is not supported"},
		{body: `{"fromImage":"x","startCmd":"python app.py"}`},
	} {
		var b startBuildBody
		if err := json.Unmarshal([]byte(tc.body), &b); err != nil {
			t.Fatal(err)
		}
		req, err := b.importRequest("t")
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one with %q", tc.body, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.body, err)
		case tc.err == "" && (req.Name != "t" || req.Image != b.FromImage || req.Insecure != tc.insecure || req.Credentials != "" || len(req.Allow) != 0):
			t.Errorf("%s: %+v, want an import of %s (insecure %v)", tc.body, req, b.FromImage, tc.insecure)
		}
	}
}

// setStartCmd(cmd, readyCmd) becomes the template's start command, the
// SDKs' ready helpers as they send them (waitForPort's ss check is one
// Airlock makes itself, by dialing the port).
func TestImportRequestStart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start string
		ready *string
		want  *client.TemplateStart
	}{
		{name: "none", want: nil},
		{name: "startCmd alone", start: "python app.py", want: &client.TemplateStart{Command: "python app.py"}},
		{name: "waitForPort(8000)", start: "python3 -m http.server 8000", ready: ptr(`[ -n "$(ss -Htuln sport = :8000)" ]`),
			want: &client.TemplateStart{Command: "python3 -m http.server 8000", ReadyPort: 8000}},
		{name: "waitForPort(0) kept as the command", start: "s", ready: ptr(`[ -n "$(ss -Htuln sport = :0)" ]`),
			want: &client.TemplateStart{Command: "s", ReadyCommand: `[ -n "$(ss -Htuln sport = :0)" ]`}},
		{name: "waitForURL", start: "npm start", ready: ptr(`curl -s -o /dev/null -w "%{http_code}" 'http://localhost:3000/health' | grep -q "200"`),
			want: &client.TemplateStart{Command: "npm start", ReadyCommand: `curl -s -o /dev/null -w "%{http_code}" 'http://localhost:3000/health' | grep -q "200"`}},
		{name: "waitForProcess", start: "./my-daemon", ready: ptr(`pgrep 'my-daemon' > /dev/null`),
			want: &client.TemplateStart{Command: "./my-daemon", ReadyCommand: `pgrep 'my-daemon' > /dev/null`}},
		{name: "waitForFile", start: "./init.sh", ready: ptr(`[ -f '/tmp/ready' ]`),
			want: &client.TemplateStart{Command: "./init.sh", ReadyCommand: `[ -f '/tmp/ready' ]`}},
		{name: "waitForTimeout(5000)", start: "npm start", ready: ptr("sleep 5"),
			want: &client.TemplateStart{Command: "npm start", ReadyCommand: "sleep 5"}},
	} {
		body := map[string]any{"fromImage": testImage, "steps": []any{}, "force": false}
		if tc.start != "" {
			body["startCmd"] = tc.start
		}
		if tc.ready != nil {
			body["readyCmd"] = *tc.ready
		}
		raw, _ := json.Marshal(body)
		var b startBuildBody
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatal(err)
		}
		req, err := b.importRequest("t")
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, req.Start); diff != "" {
			t.Errorf("%s: start (-want +got):\n%s", tc.name, diff)
		}
	}
}

func FuzzImportRequest(f *testing.F) {
	f.Add(`{"fromImage":"127.0.0.1:5000/x","steps":[]}`)
	f.Add(`{"fromImage":"x","steps":[{"type":"RUN"}],"fromImageRegistry":null}`)
	f.Fuzz(func(t *testing.T, s string) {
		var b startBuildBody
		if json.Unmarshal([]byte(s), &b) != nil {
			return
		}
		req, err := b.importRequest("t")
		if err == nil && (req.Image == "" || len(b.Steps) > 0 || b.FromTemplate != "" || b.StartCmd == "" && b.ReadyCmd != "") {
			t.Fatalf("%s became an import %+v", s, req)
		}
		if err == nil && b.StartCmd != "" && (req.Start == nil || req.Start.Command != b.StartCmd || req.Start.ReadyCommand == "" && req.Start.ReadyPort == 0 && b.ReadyCmd != "") {
			t.Fatalf("%s: start command %+v dropped part of startCmd/readyCmd", s, req.Start)
		}
	})
}

// Only an admin key imports images: any other is refused when the build
// is asked for (the SDK's BuildError "403: ..."), and cannot see or
// trigger another's build.
func TestTemplateBuildNeedsAdmin(t *testing.T) {
	f := newFacade(t)
	f.fake.AddImage(testImage, nil)
	admin := client.New(f.fake.URL, f.key)
	if _, err := admin.CreateTenant(t.Context(), client.TenantRequest{Name: "t1"}); err != nil {
		t.Fatal(err)
	}
	k, err := admin.CreateKey(t.Context(), "t1", "k")
	if err != nil {
		t.Fatal(err)
	}
	user := &facade{t: t, url: f.url, key: k.Key}
	var ae apiError
	if st := user.api("POST", "/v3/templates", `{"name":"img"}`, &ae); st != 403 || ae.Code != 403 || !strings.Contains(ae.Message, "admin key") {
		t.Errorf("a tenant's key: %d %+v, want 403 naming the admin key", st, ae)
	}
	var a templateAnswer
	f.api("POST", "/v3/templates", `{"name":"img"}`, &a)
	if st := user.api("GET", "/templates/img/builds/"+a.BuildID+"/status", "", &ae); st != 404 {
		t.Errorf("another key's status poll: %d %+v, want 404", st, ae)
	}
	if st := user.api("POST", "/v2/templates/img/builds/"+a.BuildID, `{"fromImage":"`+testImage+`"}`, &ae); st != 404 {
		t.Errorf("another key's trigger: %d %+v, want 404", st, ae)
	}
	if st := f.api("GET", "/templates/other/builds/"+a.BuildID+"/status", "", &ae); st != 404 {
		t.Errorf("the build under another template's id: %d, want 404", st)
	}
}

// Close ends the imports in progress and waits for them: no goroutine
// outlives the handler.
func TestBuildCloseStopsImports(t *testing.T) {
	f := newFacade(t)
	f.fake.AddImage(testImage, make(chan struct{})) // never released
	var a templateAnswer
	f.api("POST", "/v3/templates", `{"name":"img"}`, &a)
	if st := f.api("POST", "/v2/templates/img/builds/"+a.BuildID, `{"fromImage":"`+testImage+`"}`, nil); st != 202 {
		t.Fatalf("trigger: %d", st)
	}
	var log []buildLogEntry
	f.waitStatus(a, "building", &log)
	f.h.Close()
	if info := f.status(a, 0); info.Status != "error" {
		t.Errorf("after Close: %+v, want the build ended with an error", info)
	}
}

// At most maxRunning imports run at once: the next trigger is a 429 with
// Retry-After (which the SDK waits out and sends again), its build still
// waiting, and goes through once one has ended.
func TestBuildsBounded(t *testing.T) {
	f := newFacade(t)
	hold := make(chan struct{})
	f.fake.AddImage(testImage, hold)
	var builds []templateAnswer
	for i := range maxRunning + 1 {
		var a templateAnswer
		if st := f.api("POST", "/v3/templates", fmt.Sprintf(`{"name":"img%d"}`, i), &a); st != 202 {
			t.Fatalf("request build %d: %d", i, st)
		}
		builds = append(builds, a)
	}
	trigger := func(a templateAnswer) *http.Response {
		hdr := http.Header{"X-Api-Key": {f.key}, "Content-Type": {"application/json"}}
		return f.call("POST", "/v2/templates/"+a.TemplateID+"/builds/"+a.BuildID, hdr, strings.NewReader(`{"fromImage":"`+testImage+`"}`), nil)
	}
	for _, a := range builds[:maxRunning] {
		if resp := trigger(a); resp.StatusCode != 202 {
			t.Fatalf("trigger %s: %d", a.TemplateID, resp.StatusCode)
		}
	}
	last := builds[maxRunning]
	if resp := trigger(last); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("trigger past the bound: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if info := f.status(last, 0); info.Status != "waiting" {
		t.Errorf("the build refused for now: %+v, want waiting", info)
	}
	close(hold)
	var log []buildLogEntry
	f.waitStatus(builds[0], "ready", &log)
	if resp := trigger(last); resp.StatusCode != 202 {
		t.Errorf("trigger once one ended: %d", resp.StatusCode)
	}
	log = nil
	f.waitStatus(last, "ready", &log)
}
