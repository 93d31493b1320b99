package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/client/clienttest"
)

// connect runs the bridge over in-memory transports against a fake API.
func connect(t *testing.T, fake *clienttest.Server, key string) *mcpsdk.ClientSession {
	t.Helper()
	ct, st := mcpsdk.NewInMemoryTransports()
	srv := NewServer(Fixed(client.New(fake.URL, key)))
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcpsdk.ClientSession, name string, args map[string]any) (map[string]any, *mcpsdk.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	var out map[string]any
	if b, _ := json.Marshal(res.StructuredContent); res.StructuredContent != nil {
		json.Unmarshal(b, &out)
	}
	return out, res
}

func resultText(res *mcpsdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestTools(t *testing.T) {
	fake := clienttest.NewServer(t)
	cs := connect(t, fake, fake.AdminKey)
	out, res := callTool(t, cs, "sandbox_create", map[string]any{"timeout_s": 60})
	id, _ := out["sandbox_id"].(string)
	if res.IsError || id == "" {
		t.Fatalf("sandbox_create: %s %v", resultText(res), out)
	}

	// Output over the cap keeps its head and tail and says how to get the rest.
	fake.SetExec(func(argv []string, stdout, stderr io.Writer) (int, int) {
		fmt.Fprint(stdout, "START"+strings.Repeat("x", 200<<10)+"END")
		fmt.Fprint(stderr, "warn")
		return 2, 0
	})
	out, res = callTool(t, cs, "run_command", map[string]any{"sandbox_id": id, "command": "make"})
	stdout, _ := out["stdout"].(string)
	if res.IsError || out["exit_code"] != 2.0 || out["stderr"] != "warn" || !strings.HasPrefix(stdout, "START") || !strings.HasSuffix(stdout, "END") ||
		len(stdout) > outputCap+100 || !strings.Contains(out["note"].(string), "read_file") {
		t.Errorf("run_command with 200 KiB of output: error %v, exit %v, stderr %v, %d bytes, note %v", res.IsError, out["exit_code"], out["stderr"], len(stdout), out["note"])
	}

	bin := base64.StdEncoding.EncodeToString([]byte{0, 1, 0xff})
	for _, c := range []struct {
		content string
		b64     bool
	}{{"text ü\n", false}, {bin, true}} {
		if _, res := callTool(t, cs, "write_file", map[string]any{"sandbox_id": id, "path": "f", "content": c.content, "base64": c.b64}); res.IsError {
			t.Fatalf("write_file: %s", resultText(res))
		}
		out, res := callTool(t, cs, "read_file", map[string]any{"sandbox_id": id, "path": "/home/user/f"})
		if res.IsError || out["content"] != c.content || out["base64"] != c.b64 {
			t.Errorf("read_file after writing %q: %v %s", c.content, out, resultText(res))
		}
	}
	if _, res := callTool(t, cs, "write_file", map[string]any{"sandbox_id": id, "path": "f", "content": "not base64!", "base64": true}); !res.IsError ||
		!strings.Contains(resultText(res), "base64") {
		t.Errorf("write_file with bad base64: %s", resultText(res))
	}
}

// TestNotFound: an unknown sandbox is a tool error that says what to do.
func TestNotFound(t *testing.T) {
	fake := clienttest.NewServer(t)
	cs := connect(t, fake, fake.AdminKey)
	for tool, args := range map[string]map[string]any{
		"run_command":     {"command": "true"},
		"shell":           {"command": "true"},
		"read_file":       {"path": "x"},
		"sandbox_destroy": {},
		"sandbox_extend":  {"timeout_s": 60},
	} {
		args["sandbox_id"] = "sb-nope"
		_, res := callTool(t, cs, tool, args)
		if msg := resultText(res); !res.IsError || !strings.Contains(msg, "sb-nope not found") || !strings.Contains(msg, "sandbox_create") {
			t.Errorf("%s on an unknown sandbox: error %v, %q", tool, res.IsError, msg)
		}
	}
}

// TestHTTPAuth: the HTTP handler checks the key with the API before the
// session starts, and tools run with that key.
func TestHTTPAuth(t *testing.T) {
	fake := clienttest.NewServer(t)
	srv := httptest.NewServer(NewHTTPHandler(HTTPOptions{APIURL: fake.URL}))
	t.Cleanup(srv.Close)
	dial := func(key string) (*mcpsdk.ClientSession, error) {
		hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+key)
			return http.DefaultTransport.RoundTrip(r)
		})}
		return mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil).
			Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
	}
	if cs, err := dial("alk_wrong"); err == nil {
		cs.Close()
		t.Fatal("a wrong key got a session")
	}
	cs, err := dial(fake.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if out, res := callTool(t, cs, "sandbox_list", nil); res.IsError || out["sandboxes"] == nil {
		t.Errorf("sandbox_list: %s %v", resultText(res), out)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
