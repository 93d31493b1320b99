package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client/clienttest"
)

// dialHTTP connects go-sdk's client to h with key, asking for revision
// version ("" for the client's newest).
func dialHTTP(url, key, version string, opts *mcpsdk.ClientOptions) (*mcpsdk.ClientSession, error) {
	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+key)
		return http.DefaultTransport.RoundTrip(r)
	})}
	return mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, opts).Connect(context.Background(),
		&mcpsdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcpsdk.ClientSessionOptions{ProtocolVersion: version})
}

// TestHTTPRevisions: every revision a client may ask for is served on the
// one endpoint, 2026-07-28 without a session, the older ones with one, and
// a tool call streams its progress either way.
func TestHTTPRevisions(t *testing.T) {
	fake := clienttest.NewServer(t)
	fake.SetExec(func(argv []string, stdout, stderr io.Writer) (int, int) {
		fmt.Fprint(stdout, "tick\n")
		return 0, 0
	})
	srv := httptest.NewServer(NewHTTPHandler(HTTPOptions{APIURL: fake.URL}))
	t.Cleanup(srv.Close)
	for _, c := range []struct{ ask, want string }{
		{"", "2026-07-28"},
		{"2026-07-28", "2026-07-28"},
		{"2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-03-26"},
		{"2024-11-05", "2024-11-05"},
	} {
		t.Run("ask "+c.ask, func(t *testing.T) {
			var mu sync.Mutex
			var progress []string
			cs, err := dialHTTP(srv.URL, fake.AdminKey, c.ask, &mcpsdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcpsdk.ProgressNotificationClientRequest) {
				mu.Lock()
				progress = append(progress, r.Params.Message)
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != c.want {
				t.Errorf("negotiated %s, want %s", got, c.want)
			}
			if stateless := c.want >= firstStateless; (cs.ID() == "") != stateless {
				t.Errorf("session id %q on %s: want one only before %s", cs.ID(), c.want, firstStateless)
			}
			out, res := callTool(t, cs, "sandbox_create", map[string]any{"timeout_s": 60})
			id, _ := out["sandbox_id"].(string)
			if res.IsError || id == "" {
				t.Fatalf("sandbox_create: %s", resultText(res))
			}
			p := &mcpsdk.CallToolParams{Name: "run_command", Arguments: map[string]any{"sandbox_id": id, "command": "echo tick"}}
			p.SetProgressToken("tok")
			run, err := cs.CallTool(context.Background(), p)
			if err != nil || run.IsError || !strings.Contains(resultText(run), "tick") {
				t.Fatalf("run_command: %v %+v", err, run)
			}
			// The client may hand the notification to its handler after
			// the result.
			var got []string
			for deadline := time.Now().Add(5 * time.Second); len(got) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				got = slices.Clone(progress)
				mu.Unlock()
			}
			if len(got) == 0 || got[0] != "tick" {
				t.Errorf("progress notifications: %q, want the command's output", got)
			}
			rr, err := cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: sandboxesURI})
			if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, id) {
				t.Errorf("read %s: %v %+v", sandboxesURI, err, rr)
			} else if rr.CacheScope != "private" {
				t.Errorf("read %s: cacheScope %q, want private (one tenant's data)", sandboxesURI, rr.CacheScope)
			}
			if _, res := callTool(t, cs, "sandbox_destroy", map[string]any{"sandbox_id": id}); res.IsError {
				t.Errorf("sandbox_destroy: %s", resultText(res))
			}
		})
	}
}

// TestHTTPStatelessKey: without a session, every 2026-07-28 request is
// checked on its own: a wrong key on any one of them is refused (401),
// whatever the requests before it carried.
func TestHTTPStatelessKey(t *testing.T) {
	fake := clienttest.NewServer(t)
	srv := httptest.NewServer(NewHTTPHandler(HTTPOptions{APIURL: fake.URL}))
	t.Cleanup(srv.Close)
	post := func(key, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", firstStateless)
		req.Header.Set("Mcp-Method", "tools/list")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp := post(fake.AdminKey, list)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") != "" || !strings.Contains(string(body), "sandbox_create") {
		t.Errorf("tools/list at 2026-07-28: %s, session %q, %.200s", resp.Status, resp.Header.Get("Mcp-Session-Id"), body)
	}
	if resp := post("alk_wrong", list); resp.StatusCode != 401 {
		t.Errorf("tools/list at 2026-07-28 with a wrong key: %s, want 401", resp.Status)
	}
}

// TestHTTPAskReplicas: over HTTP the question reaches the client at every
// revision; at 2026-07-28 the retry may reach another replica, which
// trusts the requestState only if it shares the key that signed it.
func TestHTTPAskReplicas(t *testing.T) {
	fastPoll(t)
	for _, c := range []struct {
		name       string
		version    string
		keyA, keyB []byte
		ok         bool
	}{
		{"2025-11-25", "2025-11-25", nil, nil, true},
		{"2026-07-28 shared key", "2026-07-28", []byte("k"), []byte("k"), true},
		{"2026-07-28 own keys", "2026-07-28", nil, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newApprovalFake(t)
			a := NewHTTPHandler(HTTPOptions{APIURL: f.URL, StateKey: c.keyA})
			b := NewHTTPHandler(HTTPOptions{APIURL: f.URL, StateKey: c.keyB})
			var mu sync.Mutex
			n := 0
			// Every POST of a 2026-07-28 client stands alone: send them
			// to the replicas in turn (a session stays on one).
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n++
				h := a
				if c.version >= firstStateless && n%2 == 0 {
					h = b
				}
				mu.Unlock()
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			e := newElicited(accept(map[string]any{"decision": "allow"}))
			cs, err := dialHTTP(srv.URL, f.AdminKey, c.version, e.options())
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			id := newSandbox(t, cs)
			res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "run_command",
				Arguments: map[string]any{"sandbox_id": id, "command": "ask " + id + " a.test"}})
			if err != nil {
				t.Fatal(err)
			}
			if !c.ok {
				if !res.IsError || !strings.Contains(resultText(res), "not issued by this server") {
					t.Errorf("a retry at a replica with another key: %s", resultText(res))
				}
				return
			}
			if out := decoded[runOut](t, res); res.IsError || out.Stdout != "allowed\n" || len(out.Approvals) != 1 || out.Approvals[0].State != "allowed" {
				t.Errorf("run_command: %s", resultText(res))
			}
		})
	}
}
