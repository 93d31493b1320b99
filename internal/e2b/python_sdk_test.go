package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/client"
)

// What the E2B Python SDK (2.34.0) tripped over; e2e/e2bpy drives the SDK
// itself.

// pythonCreateBody is the body Sandbox.create() sends with no arguments:
// every default spelled out, allow_internet_access and autoResume too.
const pythonCreateBody = `{"templateID":"base","allow_internet_access":true,"autoPause":false,` +
	`"autoResume":{"enabled":false},"envVars":{},"metadata":{},"secure":true,"timeout":300}`

func TestCreatePythonDefaults(t *testing.T) {
	var b createBody
	if err := json.Unmarshal([]byte(pythonCreateBody), &b); err != nil {
		t.Fatal(err)
	}
	got, err := b.createRequest()
	if err != nil {
		t.Fatalf("the Python SDK's defaults refused: %v", err)
	}
	// allow_internet_access: E2B's open internet, as far as an Airlock
	// policy says it; autoResume {enabled: false} asks for nothing.
	want := client.CreateRequest{Template: "base", Timeout: 300 * time.Second, Metadata: map[string]string{}, Env: map[string]string{},
		Network: &client.NetworkPolicy{Mode: client.NetworkAllowlist, Allow: []string{"0.0.0.0/0", "::/0"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("request (-want +got):\n%s", d)
	}
}

// E2B checks the key before the body: the SDK raises
// AuthenticationException for 401 only.
func TestCreateChecksKeyFirst(t *testing.T) {
	f := newFacade(t)
	for _, tc := range []struct {
		name, key, body string
		want            int
	}{
		{"wrong key, good body", "alk_wrong", pythonCreateBody, 401},
		{"wrong key, bad JSON", "alk_wrong", `{`, 401},
		{"wrong key, refused field", "alk_wrong", `{"mcp":{"exa":{}}}`, 401},
		{"wrapped wrong key, refused field", WrapKey("alk_wrong"), `{"autoPause":true}`, 401},
		{"no key, refused field", "", `{"autoPause":true}`, 401},
		{"right key, bad JSON", f.key, `{`, 400},
		{"right key, refused field", f.key, `{"autoPause":true}`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := http.Header{"Content-Type": {"application/json"}}
			if tc.key != "" {
				hdr.Set("X-Api-Key", tc.key)
			}
			var e apiError
			if resp := f.call("POST", "/sandboxes", hdr, strings.NewReader(tc.body), &e); resp.StatusCode != tc.want || e.Code != tc.want {
				t.Errorf("%d %+v, want %d", resp.StatusCode, e, tc.want)
			}
		})
	}
}

// An envd call on an ended sandbox (its token gone with it) answers what
// E2B's edge answers: 502 "The sandbox was not found", which the SDKs
// raise as their sandbox TimeoutException, not AuthenticationException.
func TestEndedSandbox(t *testing.T) {
	e := newEnvd(t)
	gone := e.header()
	gone.Set("X-Access-Token", "alt_deleted") // what the API says of a killed sandbox's token

	gone.Set("Content-Type", "application/json")
	var rerr rpcError
	if resp := e.call("POST", "/envd/filesystem.Filesystem/ListDir", gone, strings.NewReader(`{"path":"/"}`), &rerr); resp.StatusCode != 503 ||
		rerr.Code != codeUnavailable || !strings.HasPrefix(rerr.Message, "The sandbox was not found") {
		t.Errorf("unary call: %d %+v", resp.StatusCode, rerr)
	}

	gone.Set("Content-Type", "application/connect+json")
	req := mustReq(t, "POST", e.url+"/envd/process.Process/Start", gone)
	req.Body = io.NopCloser(bytes.NewReader(appendEnvelope(nil, 0, []byte(`{"process":{"cmd":"true"}}`))))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, msg, err := readEnvelope(resp.Body)
	resp.Body.Close()
	var end struct{ Error rpcError }
	if err != nil || json.Unmarshal(msg, &end) != nil || end.Error.Code != codeUnavailable || !strings.HasPrefix(end.Error.Message, "The sandbox was not found") {
		t.Errorf("stream: %s, %v", msg, err)
	}

	for _, method := range []string{"GET", "POST"} {
		gone.Set("Content-Type", "application/octet-stream")
		var body struct {
			SandboxID string `json:"sandboxId"`
			apiError
		}
		resp := e.call(method, "/envd/files?path=a.txt", gone, strings.NewReader("x"), &body)
		if resp.StatusCode != 502 || body.Code != 502 || body.SandboxID != e.id || !strings.HasPrefix(body.Message, "The sandbox was not found") {
			t.Errorf("%s /files: %d %+v", method, resp.StatusCode, body)
		}
	}
	if resp := e.call("GET", "/envd/health", gone, nil, nil); resp.StatusCode != 502 {
		t.Errorf("health: %d, want 502 (not running)", resp.StatusCode)
	}
	// A missing token is still the caller's mistake.
	hdr := e.header()
	hdr.Del("X-Access-Token")
	hdr.Set("Content-Type", "application/json")
	rerr = rpcError{}
	if resp := e.call("POST", "/envd/filesystem.Filesystem/ListDir", hdr, strings.NewReader(`{"path":"/"}`), &rerr); resp.StatusCode != 401 || rerr.Code != codeUnauthenticated {
		t.Errorf("no token: %d %+v", resp.StatusCode, rerr)
	}
}

// execAPI is the API's exec route as far as startProcess uses it: it
// refuses a timeout past the sandbox's remaining life, as the service
// does, and records the timeouts it was asked for.
type execAPI struct {
	left time.Duration // the sandbox's remaining life
	bad  bool          // refuse every start (for something else)

	mu   sync.Mutex
	asks []int64 // timeout_s of each start
}

func (a *execAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, code, msg string) {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
	}
	switch {
	case r.Method == "GET" && r.URL.Path == "/v1/sandboxes/sb-1":
		json.NewEncoder(w).Encode(client.Sandbox{ID: "sb-1", State: client.StateRunning, ExpiresAt: time.Now().Add(a.left)})
	case r.Method == "POST" && r.URL.Path == "/v1/sandboxes/sb-1/exec":
		var req struct {
			TimeoutS int64 `json:"timeout_s"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		a.mu.Lock()
		a.asks = append(a.asks, req.TimeoutS)
		a.mu.Unlock()
		switch {
		case a.bad:
			fail(400, "invalid_argument", "cwd: no such directory")
		case time.Duration(req.TimeoutS)*time.Second > a.left:
			fail(400, "invalid_argument", "timeout_s is past the sandbox's remaining life")
		default:
			json.NewEncoder(w).Encode(client.Process{Pid: 7, State: "running"})
		}
	default:
		fail(404, "not_found", r.URL.Path)
	}
}

// The SDKs' default command timeout (60 s) is cut to what is left of the
// sandbox's life, instead of the API's refusal failing every command of
// a sandbox in its last minute.
func TestStartProcessClamp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		left    time.Duration
		bad     bool
		timeout time.Duration
		asks    []int64
		err     bool
	}{
		{name: "within the sandbox's life", left: time.Hour, timeout: time.Minute, asks: []int64{60}},
		{name: "past it: the rest of its life", left: 20 * time.Second, timeout: time.Minute, asks: []int64{60, 0}},
		{name: "no timeout", left: 20 * time.Second, asks: []int64{0}},
		// The API takes whole seconds, rounded up: 19.5 s is 20 s.
		{name: "past it once rounded up", left: 19700 * time.Millisecond, timeout: 19500 * time.Millisecond, asks: []int64{20, 0}},
		{name: "refused for something else", left: time.Hour, bad: true, timeout: time.Minute, asks: []int64{60}, err: true},
		{name: "refused for something else, past its life", left: 20 * time.Second, bad: true, timeout: time.Minute, asks: []int64{60, 0}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &execAPI{left: tc.left, bad: tc.bad}
			srv := httptest.NewServer(api)
			defer srv.Close()
			p, err := startProcess(context.Background(), client.New(srv.URL, "alt_x"), "sb-1", client.ExecRequest{Cmd: []string{"true"}, Timeout: tc.timeout}, "")
			if (err != nil) != tc.err || err == nil && p.Pid != 7 {
				t.Errorf("startProcess: %+v, %v", p, err)
			}
			if err != nil && !errors.Is(err, client.ErrInvalid) {
				t.Errorf("error %v, want the API's own", err)
			}
			if d := cmp.Diff(tc.asks, api.asks); d != "" {
				t.Errorf("timeouts asked for (-want +got):\n%s", d)
			}
		})
	}
}
