package e2b

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/client"
)

// Volume.create/list/getInfo/destroy, and volumeMounts: a file written on
// the volume by one sandbox is read by the next that mounts it; a second
// read-write mount and a delete while mounted are refused.
func TestVolumes(t *testing.T) {
	f := newFacade(t)
	var v volumeBody
	if st := f.api("POST", "/volumes", `{"name":"data"}`, &v); st != 201 || v.VolumeID != "data" || v.Name != "data" || v.Token == nil || *v.Token != "" {
		t.Fatalf("create: %d %+v, want 201 with id and name data and an empty token", st, v)
	}
	vols, err := client.New(f.fake.URL, f.key).ListVolumes(t.Context())
	if err != nil || len(vols) != 1 || vols[0].SizeMB != defaultVolumeMB {
		t.Errorf("Airlock's volumes: %+v %v, want data of %d MiB", vols, err, defaultVolumeMB)
	}
	var ae apiError
	if st := f.api("POST", "/volumes", `{"name":"data"}`, &ae); st != 409 || ae.Code != 409 {
		t.Errorf("second create: %d %+v, want 409", st, ae)
	}
	if st := f.api("POST", "/volumes", `{}`, &ae); st != 400 {
		t.Errorf("create without a name: %d %+v, want 400", st, ae)
	}
	var list []map[string]any
	if st := f.api("GET", "/volumes", "", &list); st != 200 || !cmp.Equal(list, []map[string]any{{"volumeID": "data", "name": "data"}}) {
		t.Errorf("list: %d %v", st, list)
	}
	if st := f.api("GET", "/volumes/data", "", &v); st != 200 || v.VolumeID != "data" || v.Token == nil {
		t.Errorf("get: %d %+v", st, v)
	}
	if st := f.api("GET", "/volumes/nope", "", &ae); st != 404 || ae.Code != 404 {
		t.Errorf("get of a volume that is not there: %d %+v, want 404 (VolumeNotFoundError)", st, ae)
	}

	// The first sandbox writes on the volume.
	var a sandboxBody
	if st := f.api("POST", "/v2/sandboxes", `{"volumeMounts":[{"name":"data","path":"/mnt/data"}]}`, &a); st != 201 {
		t.Fatalf("create with the volume: %d", st)
	}
	ea := &envd{facade: f, id: a.SandboxID, token: a.EnvdAccessToken}
	if got := ea.get().VolumeMounts; !cmp.Equal(got, []volumeMountBody{{Name: "data", Path: "/mnt/data"}}) {
		t.Errorf("getInfo's volumeMounts: %+v", got)
	}
	ea.writeFile("/mnt/data/kept.txt", "on the volume")
	ea.writeFile("/tmp/not-kept.txt", "in the sandbox")

	if st := f.api("POST", "/v2/sandboxes", `{"volumeMounts":[{"name":"data","path":"/mnt/data"}]}`, &ae); st != 409 || !strings.Contains(ae.Message, "read-write") {
		t.Errorf("a second read-write mount: %d %+v, want 409", st, ae)
	}
	if st := f.api("DELETE", "/volumes/data", "", &ae); st != 409 || !strings.Contains(ae.Message, a.SandboxID) {
		t.Errorf("destroy while mounted: %d %+v, want 409 naming %s", st, ae, a.SandboxID)
	}
	if st := f.api("POST", "/v2/sandboxes", `{"volumeMounts":[{"name":"gone","path":"/mnt/gone"}]}`, &ae); st != 404 || strings.Contains(ae.Message, "template") || !strings.Contains(ae.Message, "gone") {
		t.Errorf("a volume that is not there: %d %+v, want the API's 404 about the volume", st, ae)
	}
	if st := f.api("POST", "/v2/sandboxes", `{"volumeMounts":[{"name":"data"}]}`, &ae); st != 400 {
		t.Errorf("a mount without a path: %d %+v, want 400", st, ae)
	}
	if st := f.api("DELETE", "/sandboxes/"+a.SandboxID, "", nil); st != 204 {
		t.Fatalf("kill: %d", st)
	}

	// The next sandbox, mounting it elsewhere, reads what the first wrote.
	var b sandboxBody
	if st := f.api("POST", "/v2/sandboxes", `{"volumeMounts":[{"name":"data","path":"/mnt/other"}]}`, &b); st != 201 {
		t.Fatalf("create with the volume after the first was killed: %d", st)
	}
	eb := &envd{facade: f, id: b.SandboxID, token: b.EnvdAccessToken}
	if st, body := eb.readFile("/mnt/other/kept.txt"); st != 200 || body != "on the volume" {
		t.Errorf("read in the next sandbox: %d %q", st, body)
	}
	if st, _ := eb.readFile("/tmp/not-kept.txt"); st != 404 {
		t.Errorf("the first sandbox's own file in the next: %d, want 404", st)
	}
	f.api("DELETE", "/sandboxes/"+b.SandboxID, "", nil)
	if st := f.api("DELETE", "/volumes/data", "", nil); st != 204 {
		t.Errorf("destroy: %d, want 204", st)
	}
	if st := f.api("DELETE", "/volumes/data", "", &ae); st != 404 {
		t.Errorf("second destroy: %d %+v, want 404 (destroy() returns false)", st, ae)
	}
}

// The volume content API reads and writes a volume without a sandbox,
// which Airlock cannot: every call is a 501 saying what to do instead,
// never a 404 (the SDK would call that "path not found").
func TestVolumeContentRefused(t *testing.T) {
	f := newFacade(t)
	for _, c := range []struct{ method, path string }{
		{"GET", "/volumecontent/data/file?path=/a"},
		{"PUT", "/volumecontent/data/file?path=/a"},
		{"GET", "/volumecontent/data/dir?path=/"},
		{"POST", "/volumecontent/data/dir?path=/d"},
		{"GET", "/volumecontent/data/path?path=/a"},
		{"PATCH", "/volumecontent/data/path?path=/a"},
		{"DELETE", "/volumecontent/data/path?path=/a"},
	} {
		var ae apiError
		resp := f.call(c.method, c.path, http.Header{"Content-Type": {"application/octet-stream"}}, strings.NewReader("x"), &ae)
		if resp.StatusCode != 501 || ae.Code != 501 || !strings.Contains(ae.Message, "mount it in a sandbox") {
			t.Errorf("%s %s: %d %+v, want 501 naming the workaround", c.method, c.path, resp.StatusCode, ae)
		}
	}
}
