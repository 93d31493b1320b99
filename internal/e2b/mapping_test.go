package e2b

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/client"
)

func TestCreateRequest(t *testing.T) {
	sec := func(n int64) *int64 { return &n }
	no, yes := false, true
	type network = struct {
		AllowOut    []string        `json:"allowOut"`
		DenyOut     []string        `json:"denyOut"`
		EgressProxy json.RawMessage `json:"egressProxy"`
		Rules       json.RawMessage `json:"rules"`
		// Who reaches the sandbox's ports: hostports.go.
		AllowPublicTraffic *bool   `json:"allowPublicTraffic"`
		MaskRequestHost    *string `json:"maskRequestHost"`
	}
	for _, tc := range []struct {
		name string
		body createBody
		want client.CreateRequest
		err  string
	}{
		{name: "defaults", body: createBody{}, want: client.CreateRequest{Template: "base"}},
		{name: "fields", body: createBody{TemplateID: "base", Timeout: sec(90), Metadata: map[string]string{"a": "b"}, EnvVars: map[string]string{"X": "1"}},
			want: client.CreateRequest{Template: "base", Timeout: 90 * time.Second, Metadata: map[string]string{"a": "b"}, Env: map[string]string{"X": "1"}}},
		{name: "no internet is Airlock's default", body: createBody{AllowInternetAccess: &no}, want: client.CreateRequest{Template: "base"}},
		{name: "allowOut and denyOut", body: createBody{Network: &network{AllowOut: []string{"pypi.org", "1.2.3.4"}, DenyOut: []string{"bad.example"}}},
			want: client.CreateRequest{Template: "base", Network: &client.NetworkPolicy{Mode: "allowlist", Allow: []string{"pypi.org", "1.2.3.4"}, Deny: []string{"bad.example"}}}},
		{name: "built template", body: createBody{TemplateID: "harness-codex"}, want: client.CreateRequest{Template: "harness-codex"}},
		{name: "wide entries", body: createBody{Network: &network{AllowOut: []string{"0.0.0.0/0", "::/0"}}},
			want: client.CreateRequest{Template: "base", Network: &client.NetworkPolicy{Mode: "allowlist", Allow: []string{"0.0.0.0/0", "::/0"}}}},
		// E2B's open internet, as far as an Airlock policy says it.
		{name: "open internet", body: createBody{AllowInternetAccess: &yes},
			want: client.CreateRequest{Template: "base", Network: &client.NetworkPolicy{Mode: "allowlist", Allow: []string{"0.0.0.0/0", "::/0"}}}},
		{name: "open internet but denyOut", body: createBody{AllowInternetAccess: &yes, Network: &network{DenyOut: []string{"203.0.113.0/24"}}},
			want: client.CreateRequest{Template: "base", Network: &client.NetworkPolicy{Mode: "allowlist", Allow: []string{"0.0.0.0/0", "::/0"}, Deny: []string{"203.0.113.0/24"}}}},
		{name: "allowOut with the internet on", body: createBody{AllowInternetAccess: &yes, Network: &network{AllowOut: []string{"pypi.org"}}},
			want: client.CreateRequest{Template: "base", Network: &client.NetworkPolicy{Mode: "allowlist", Allow: []string{"pypi.org"}}}},
		{name: "denyOut alone", body: createBody{Network: &network{DenyOut: []string{"203.0.113.0/24"}}}, want: client.CreateRequest{Template: "base"}},
		{name: "egress proxy", body: createBody{AllowInternetAccess: &yes, Network: &network{EgressProxy: json.RawMessage(`{"url":"http://p"}`)}}, err: "network.egressProxy"},
		{name: "auto pause", body: createBody{AutoPause: &yes}, err: "autoPause (lifecycle.onTimeout \"pause\") is not supported"},
		{name: "kill on timeout", body: createBody{AutoPause: &no}, want: client.CreateRequest{Template: "base"}},
		{name: "auto resume", body: createBody{AutoResume: &autoResumeBody{Enabled: true}}, want: client.CreateRequest{Template: "base", AutoResume: true}},
		{name: "no auto resume", body: createBody{AutoResume: &autoResumeBody{}}, want: client.CreateRequest{Template: "base"}},
		{name: "auto resume with auto pause", body: createBody{AutoPause: &yes, AutoResume: &autoResumeBody{Enabled: true}}, err: "autoPause"},
		{name: "volumes", body: createBody{VolumeMounts: []volumeMountBody{{Name: "v", Path: "/mnt/data"}, {Name: "w", Path: "/mnt/w"}}},
			want: client.CreateRequest{Template: "base", Volumes: []client.VolumeMount{{Name: "v", Path: "/mnt/data"}, {Name: "w", Path: "/mnt/w"}}}},
		{name: "volume without a path", body: createBody{VolumeMounts: []volumeMountBody{{Name: "v"}}}, err: "volumeMounts[0]: a mount needs"},
		{name: "mcp", body: createBody{MCP: json.RawMessage(`{"exa":{}}`)}, err: "mcp is not supported"},
		{name: "rules", body: createBody{Network: &network{Rules: json.RawMessage(`{"a.com":[{}]}`)}}, err: "network.rules"},
		{name: "zero timeout", body: createBody{Timeout: sec(0)}, err: "timeout must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.body.createRequest()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("request (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseMetadataQuery(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
		bad  bool
	}{
		{in: "", want: nil},
		{in: "run=r1", want: map[string]string{"run": "r1"}},
		// What the SDK sends for {"a b": "c&d", "k": "v=1"}: each escaped,
		// then joined by URLSearchParams, which escapes the % again.
		{in: "a%2520b=c%2526d&k=v%253D1", want: map[string]string{"a b": "c&d", "k": "v=1"}},
		{in: "=v", bad: true},
		{in: "a=%zz", bad: true},
	} {
		got, err := parseMetadataQuery(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("parseMetadataQuery(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseMetadataQuery(%q): %v", tc.in, err)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("parseMetadataQuery(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

func FuzzParseMetadataQuery(f *testing.F) {
	f.Add("run=r1&a%2520b=c")
	f.Add("%")
	f.Fuzz(func(t *testing.T, s string) {
		md, err := parseMetadataQuery(s)
		if err == nil {
			for k := range md {
				if k == "" {
					t.Fatalf("empty key from %q", s)
				}
			}
		}
	})
}

func TestEndEvent(t *testing.T) {
	for _, tc := range []struct {
		res  client.ExecResult
		want string
	}{
		{client.ExecResult{ExitCode: 0}, `{"exitCode":0,"exited":true,"status":"exit status 0"}`},
		{client.ExecResult{ExitCode: 3}, `{"exitCode":3,"exited":true,"status":"exit status 3"}`},
		{client.ExecResult{ExitCode: 137, Signal: 9}, `{"exitCode":-1,"exited":false,"status":"signal: killed"}`},
		{client.ExecResult{Signal: 9, TimedOut: true}, `{"exitCode":-1,"exited":false,"status":"signal: killed","error":"the command timed out and was killed"}`},
	} {
		b, _ := json.Marshal(endOf(tc.res))
		if string(b) != tc.want {
			t.Errorf("endOf(%+v) = %s, want %s", tc.res, b, tc.want)
		}
	}
}

// The SDK's JSON writer sends oneofs as fields, bytes as base64 and enums
// by name; a number is valid proto3 JSON for an enum too.
func TestRequestJSON(t *testing.T) {
	var sig sendSignalRequest
	if err := json.Unmarshal([]byte(`{"process":{"pid":42},"signal":"SIGNAL_SIGKILL"}`), &sig); err != nil {
		t.Fatal(err)
	}
	if *sig.Process.Pid != 42 || sig.Signal != sigKill {
		t.Errorf("got %+v", sig)
	}
	if err := json.Unmarshal([]byte(`{"signal":15}`), &sig); err != nil || sig.Signal != sigTerm {
		t.Errorf("numeric signal: %v, %v", sig.Signal, err)
	}
	if err := json.Unmarshal([]byte(`{"signal":"SIGNAL_SIGHUP"}`), &sig); err == nil {
		t.Error("an unknown signal name was accepted")
	}
	var in sendInputRequest
	if err := json.Unmarshal([]byte(`{"process":{"tag":"t"},"input":{"stdin":"aGk="}}`), &in); err != nil {
		t.Fatal(err)
	}
	if *in.Process.Tag != "t" || string(in.Input.Stdin) != "hi" || in.Input.Pty != nil {
		t.Errorf("got %+v", in)
	}
	var st startRequest
	if err := json.Unmarshal([]byte(`{"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi"],"envs":{"A":"1"},"cwd":"/tmp"},"stdin":true,"futureField":1}`), &st); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(processConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", "echo hi"}, Envs: map[string]string{"A": "1"}, Cwd: ptr("/tmp")}, st.Process); d != "" || !*st.Stdin || st.Pty != nil {
		t.Errorf("start request (-want +got):\n%s", d)
	}
}

func ptr[T any](v T) *T { return &v }

func TestEntryJSON(t *testing.T) {
	mt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := entryOf(client.FileEntry{Name: "a.txt", Type: "file", Size: 5, Mode: "0644", MTime: mt}, "/home/user/a.txt")
	b, _ := json.Marshal(e)
	want := `{"name":"a.txt","type":"FILE_TYPE_FILE","path":"/home/user/a.txt","size":"5","mode":420,"permissions":"-rw-r--r--","owner":"user","group":"user","modifiedTime":"2026-01-02T03:04:05Z"}`
	if string(b) != want {
		t.Errorf("entry JSON\n got %s\nwant %s", b, want)
	}
	mode, perm := modeBits("dir", "0750")
	if mode != 1<<31|0o750 || perm != "drwxr-x---" {
		t.Errorf("modeBits(dir, 0750) = %o, %q", mode, perm)
	}
}

func TestKeyWrapping(t *testing.T) {
	k := "alk_0123abcd"
	w := WrapKey(k)
	if !strings.HasPrefix(w, "e2b_") || strings.Trim(w[4:], "0123456789abcdef") != "" {
		t.Errorf("WrapKey(%q) = %q, not e2b_ and hex", k, w)
	}
	for in, want := range map[string]string{w: k, k: k, "e2b_zz": "e2b_zz", "e2b_" + WrapKey("x")[4:]: "e2b_" + WrapKey("x")[4:]} {
		if got := unwrapKey(in); got != want {
			t.Errorf("unwrapKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEnvelope(t *testing.T) {
	var buf []byte
	buf = appendEnvelope(buf, 0, []byte(`{"a":1}`))
	buf = appendEnvelope(buf, flagEndStream, []byte(`{}`))
	r := bytes.NewReader(buf)
	for _, want := range []struct {
		flags byte
		msg   string
	}{{0, `{"a":1}`}, {flagEndStream, `{}`}} {
		flags, msg, err := readEnvelope(r)
		if err != nil || flags != want.flags || string(msg) != want.msg {
			t.Errorf("readEnvelope = %d %q %v, want %d %q", flags, msg, err, want.flags, want.msg)
		}
	}
	if _, _, err := readEnvelope(r); err == nil {
		t.Error("read past the end without an error")
	}
	huge := []byte{0, 0xff, 0xff, 0xff, 0xff}
	if _, _, err := readEnvelope(bytes.NewReader(huge)); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("a 4 GiB length: %v", err)
	}
}

func FuzzReadEnvelope(f *testing.F) {
	f.Add(appendEnvelope(nil, 0, []byte(`{"process":{"pid":1}}`)))
	f.Add([]byte{2, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		flags, msg, err := readEnvelope(bytes.NewReader(b))
		if err != nil {
			return
		}
		if got := appendEnvelope(nil, flags, msg); !bytes.Equal(got, b[:len(got)]) {
			t.Fatalf("re-encoded %x, read from %x", got, b)
		}
	})
}

func TestHTTPStatusOf(t *testing.T) {
	for code, want := range map[string]int{codeNotFound: 404, codeAlreadyExists: 409, codeUnauthenticated: 401, codeUnimplemented: 501,
		codePermissionDenied: 403, codeInvalidArgument: 400, codeResourceExhausted: 429, codeUnavailable: 503, "bogus": 500} {
		if got := httpStatusOf(code); got != want {
			t.Errorf("httpStatusOf(%s) = %d, want %d", code, got, want)
		}
	}
}
