package e2b

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/client/clienttest"
)

// facade is the facade over the in-memory fake of the API, mounted at /e2b
// as serve mounts it.
type facade struct {
	t    *testing.T
	url  string
	key  string
	fake *clienttest.Server
	h    *Handler
}

func newFacade(t *testing.T) *facade {
	fake := clienttest.NewServer(t)
	h := NewHandler(Options{APIURL: fake.URL})
	srv := httptest.NewServer(http.StripPrefix("/e2b", h))
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return &facade{t: t, url: srv.URL + "/e2b", key: fake.AdminKey, fake: fake, h: h}
}

// call makes a request and decodes a JSON answer into out (if not nil).
func (f *facade) call(method, path string, hdr http.Header, body io.Reader, out any) *http.Response {
	f.t.Helper()
	req, err := http.NewRequest(method, f.url+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			f.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp
}

func (f *facade) api(method, path, body string, out any) int {
	f.t.Helper()
	hdr := http.Header{"X-Api-Key": {f.key}, "Content-Type": {"application/json"}}
	return f.call(method, path, hdr, strings.NewReader(body), out).StatusCode
}

func TestControlPlane(t *testing.T) {
	f := newFacade(t)
	var sb sandboxBody
	if st := f.api("POST", "/v2/sandboxes", `{"templateID":"base","timeout":120,"metadata":{"run":"r1"},"secure":true}`, &sb); st != 201 {
		t.Fatalf("create: %d", st)
	}
	if sb.SandboxID == "" || sb.TemplateID != "base" || sb.EnvdVersion != EnvdVersion || !strings.HasPrefix(sb.EnvdAccessToken, "alt_") || sb.ClientID == "" {
		t.Errorf("create answered %+v", sb)
	}
	var got sandboxBody
	if st := f.api("GET", "/sandboxes/"+sb.SandboxID, "", &got); st != 200 || got.Metadata["run"] != "r1" || got.State != "running" || got.EnvdAccessToken != "" {
		t.Errorf("get: %d %+v", st, got)
	}
	var list []sandboxBody
	if st := f.api("GET", "/v2/sandboxes?metadata=run%3Dr1&state=running,paused", "", &list); st != 200 || len(list) != 1 || list[0].SandboxID != sb.SandboxID {
		t.Errorf("list by metadata: %d %+v", st, list)
	}
	if st := f.api("GET", "/v2/sandboxes?startedAfter=2000-01-01T00:00:00.000Z&template=base", "", &list); st != 200 || len(list) != 1 {
		t.Errorf("list started after 2000: %d %+v", st, list)
	}
	for _, q := range []string{"metadata=run%3Dother", "state=paused", "template=other", "startedAfter=2999-01-01T00:00:00Z"} {
		if st := f.api("GET", "/v2/sandboxes?"+q, "", &list); st != 200 || len(list) != 0 {
			t.Errorf("list ?%s: %d %+v", q, st, list)
		}
	}
	if st := f.api("POST", "/sandboxes/"+sb.SandboxID+"/timeout", `{"timeout":600}`, nil); st != 204 {
		t.Errorf("timeout: %d", st)
	}
	var conn sandboxBody
	if st := f.api("POST", "/v2/sandboxes/"+sb.SandboxID+"/connect", `{"timeout":30}`, &conn); st != 200 || conn.EnvdAccessToken == "" || conn.EnvdAccessToken == sb.EnvdAccessToken {
		t.Errorf("connect: %d %+v", st, conn)
	}
	// The key wrapped for SDKs that check E2B's key format works too.
	hdr := http.Header{"X-Api-Key": {WrapKey(f.key)}}
	if resp := f.call("GET", "/sandboxes/"+sb.SandboxID, hdr, nil, nil); resp.StatusCode != 200 {
		t.Errorf("get with the wrapped key: %d", resp.StatusCode)
	}
	if st := f.api("DELETE", "/sandboxes/"+sb.SandboxID, "", nil); st != 204 {
		t.Errorf("delete: %d", st)
	}
	var e apiError
	if st := f.api("DELETE", "/sandboxes/"+sb.SandboxID, "", &e); st != 404 || e.Code != 404 || e.Message == "" {
		t.Errorf("second delete: %d %+v, want E2B's 404", st, e)
	}
}

func TestControlPlaneErrors(t *testing.T) {
	f := newFacade(t)
	for _, tc := range []struct {
		method, path, body string
		key                string
		want               int
		msg                string
	}{
		{"POST", "/sandboxes", `{"templateID":"nope"}`, f.key, 404, "template 'nope' not found"},
		{"POST", "/sandboxes", `{`, f.key, 400, "bad request body"},
		{"GET", "/v2/sandboxes", "", "", 401, ""},
		{"GET", "/v2/sandboxes", "", "alk_unknown", 401, ""},
		{"GET", "/sandboxes/sb-none", "", f.key, 404, ""},
		{"POST", "/sandboxes/sb-none/pause", "", f.key, 404, ""},
		{"GET", "/sandboxes/sb-none/metrics", "", f.key, 501, "not supported"},
		{"POST", "/sandboxes/sb-none/timeout", `{"timeout":0}`, f.key, 400, "timeout"},
	} {
		hdr := http.Header{"Content-Type": {"application/json"}}
		if tc.key != "" {
			hdr.Set("X-Api-Key", tc.key)
		}
		var e apiError
		resp := f.call(tc.method, tc.path, hdr, strings.NewReader(tc.body), &e)
		if resp.StatusCode != tc.want || e.Code != tc.want || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s %s %s: %d %+v, want %d with %q", tc.method, tc.path, tc.body, resp.StatusCode, e, tc.want, tc.msg)
		}
	}
}

// envd is an envd caller of one sandbox, with its access token.
type envd struct {
	*facade
	id, token string
}

func newEnvd(t *testing.T) *envd {
	f := newFacade(t)
	var sb sandboxBody
	if st := f.api("POST", "/sandboxes", `{}`, &sb); st != 201 {
		t.Fatalf("create: %d", st)
	}
	return &envd{facade: f, id: sb.SandboxID, token: sb.EnvdAccessToken}
}

func (e *envd) header() http.Header {
	return http.Header{"X-Access-Token": {e.token}, "E2b-Sandbox-Id": {e.id}, "E2b-Sandbox-Port": {"49983"}}
}

// unary calls a Connect method in JSON; out gets the answer or the error.
func (e *envd) unary(method string, in, out any) int {
	e.t.Helper()
	b, _ := json.Marshal(in)
	hdr := e.header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Connect-Protocol-Version", "1")
	return e.call("POST", "/envd/"+method, hdr, bytes.NewReader(b), out).StatusCode
}

func TestEnvdFiles(t *testing.T) {
	e := newEnvd(t)
	// The SDK's multipart upload: each part named by its whole path.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for name, data := range map[string]string{"d/one.txt": "1", "/tmp/two.bin": "\x00\xff"} {
		w, _ := mw.CreateFormFile("file", name)
		w.Write([]byte(data))
	}
	mw.Close()
	hdr := e.header()
	hdr.Set("Content-Type", mw.FormDataContentType())
	var written []writeInfo
	if resp := e.call("POST", "/envd/files", hdr, &body, &written); resp.StatusCode != 200 || len(written) != 2 {
		t.Fatalf("upload: %d %+v", resp.StatusCode, written)
	}
	hdr = e.header()
	hdr.Set("Content-Type", "application/octet-stream")
	var one []writeInfo
	e.call("POST", "/envd/files?path=raw.txt", hdr, strings.NewReader("raw"), &one)
	if d := cmp.Diff([]writeInfo{{Name: "raw.txt", Type: "file", Path: "/home/user/raw.txt"}}, one); d != "" {
		t.Errorf("octet-stream upload (-want +got):\n%s", d)
	}
	for p, want := range map[string]string{"d/one.txt": "1", "/home/user/d/one.txt": "1", "/tmp/two.bin": "\x00\xff"} {
		resp, err := http.DefaultClient.Do(mustReq(t, "GET", e.url+"/envd/files?path="+p, e.header()))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != want {
			t.Errorf("read %s: %d %q, want %q", p, resp.StatusCode, b, want)
		}
	}
	var ae apiError
	if resp := e.call("GET", "/envd/files?path=missing", e.header(), nil, &ae); resp.StatusCode != 404 || ae.Code != 404 {
		t.Errorf("read of a missing file: %d %+v", resp.StatusCode, ae)
	}
}

func mustReq(t *testing.T, method, url string, hdr http.Header) *http.Request {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr
	return req
}

func TestEnvdFilesystem(t *testing.T) {
	e := newEnvd(t)
	var ent entryResponse
	if st := e.unary("filesystem.Filesystem/MakeDir", pathRequest{Path: "a/b"}, &ent); st != 200 || ent.Entry.Path != "/home/user/a/b" || ent.Entry.Type != fileTypeDir {
		t.Errorf("MakeDir: %d %+v", st, ent.Entry)
	}
	var rerr rpcError
	if st := e.unary("filesystem.Filesystem/MakeDir", pathRequest{Path: "a/b"}, &rerr); st != 409 || rerr.Code != codeAlreadyExists {
		t.Errorf("MakeDir again: %d %+v", st, rerr)
	}
	hdr := e.header()
	hdr.Set("Content-Type", "application/octet-stream")
	e.call("POST", "/envd/files?path=a/f.txt", hdr, strings.NewReader("12345"), nil)
	if st := e.unary("filesystem.Filesystem/Move", moveRequest{Source: "a/f.txt", Destination: "/home/user/c"}, &ent); st != 200 ||
		ent.Entry.Path != "/home/user/c" || ent.Entry.Type != fileTypeFile || ent.Entry.Size != 5 {
		t.Errorf("Move: %d %+v", st, ent.Entry)
	}
	var ls listDirResponse
	if st := e.unary("filesystem.Filesystem/ListDir", pathRequest{Path: "/home/user", Depth: 2}, &ls); st != 200 {
		t.Errorf("ListDir: %d", st)
	}
	var paths []string
	for _, en := range ls.Entries {
		paths = append(paths, en.Path)
	}
	if d := cmp.Diff([]string{"/home/user/a", "/home/user/a/b", "/home/user/c"}, paths); d != "" {
		t.Errorf("ListDir depth 2 (-want +got):\n%s", d)
	}
	if st := e.unary("filesystem.Filesystem/Remove", pathRequest{Path: "c"}, nil); st != 200 {
		t.Errorf("Remove: %d", st)
	}
	for _, m := range []string{"Stat", "Remove"} {
		rerr = rpcError{}
		if st := e.unary("filesystem.Filesystem/"+m, pathRequest{Path: "c"}, &rerr); st != 404 || rerr.Code != codeNotFound {
			t.Errorf("%s of a removed dir: %d %+v", m, st, rerr)
		}
	}
}

func TestEnvdAuth(t *testing.T) {
	e := newEnvd(t)
	var other sandboxBody
	e.api("POST", "/sandboxes", `{}`, &other)
	for _, tc := range []struct {
		name string
		hdr  http.Header
		code string
	}{
		{"no token", http.Header{"E2b-Sandbox-Id": {e.id}}, codeUnauthenticated},
		// What the API says of a killed sandbox's token: E2B's answer for
		// an ended sandbox (see TestEndedSandbox).
		{"unknown token", http.Header{"X-Access-Token": {"alt_nope"}, "E2b-Sandbox-Id": {e.id}}, codeUnavailable},
		// A token is a key to its own sandbox only.
		{"another sandbox's token", http.Header{"X-Access-Token": {other.EnvdAccessToken}, "E2b-Sandbox-Id": {e.id}}, codeNotFound},
		{"no sandbox id", http.Header{"X-Access-Token": {e.token}}, codeInvalidArgument},
		{"root", http.Header{"X-Access-Token": {e.token}, "E2b-Sandbox-Id": {e.id}, "Authorization": {"Basic cm9vdDo="}}, codePermissionDenied},
	} {
		tc.hdr.Set("Content-Type", "application/json")
		var rerr rpcError
		resp := e.call("POST", "/envd/filesystem.Filesystem/Stat", tc.hdr, strings.NewReader(`{"path":"/"}`), &rerr)
		if rerr.Code != tc.code || resp.StatusCode != httpStatusOf(tc.code) {
			t.Errorf("%s: %d %+v, want %s", tc.name, resp.StatusCode, rerr, tc.code)
		}
	}
}

// A streaming call's errors come in its end message, with status 200.
func TestStreamError(t *testing.T) {
	e := newEnvd(t)
	hdr := e.header()
	hdr.Set("Content-Type", "application/connect+json")
	// StreamInput is client streaming, which the SDK's transport cannot
	// send: unimplemented, in a stream's shape.
	body := appendEnvelope(nil, 0, []byte(`{"start":{"process":{"pid":1}}}`))
	req := mustReq(t, "POST", e.url+"/envd/process.Process/StreamInput", hdr)
	req.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/connect+json" {
		t.Fatalf("StreamInput: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	flags, msg, err := readEnvelope(resp.Body)
	if err != nil || flags != flagEndStream {
		t.Fatalf("first frame: flags %d, %v", flags, err)
	}
	var end struct{ Error rpcError }
	if err := json.Unmarshal(msg, &end); err != nil || end.Error.Code != codeUnimplemented {
		t.Errorf("end message %s: %v", msg, err)
	}
	// A bad token on a stream: the same shape.
	hdr.Set("X-Access-Token", "alt_nope")
	req = mustReq(t, "POST", e.url+"/envd/process.Process/Start", hdr)
	req.Body = io.NopCloser(bytes.NewReader(appendEnvelope(nil, 0, []byte(`{"process":{"cmd":"true"}}`))))
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	flags, msg, err = readEnvelope(resp2.Body)
	if err != nil || flags != flagEndStream || !strings.Contains(string(msg), codeUnavailable) {
		t.Errorf("Start with a bad token: flags %d, %s, %v", flags, msg, err)
	}
}
