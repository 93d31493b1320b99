package egress

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestModelCallOf(t *testing.T) {
	for _, tt := range []struct {
		method, path, api, model string
	}{
		{"POST", "/v1/responses", APIOpenAIResponses, ""},
		{"POST", "/openai/v1/responses/", APIOpenAIResponses, ""},
		{"POST", "/v1/chat/completions", APIOpenAIChat, ""},
		{"POST", "/api/v1/chat/completions", APIOpenAIChat, ""},
		{"POST", "/v1/messages", APIAnthropicMessages, ""},
		{"POST", "/v1beta/models/gemini-2.5-pro:generateContent", APIGemini, "gemini-2.5-pro"},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", APIGemini, "gemini-2.5-flash"},
		{"POST", "/v1/projects/p/locations/l/publishers/google/models/gemini-2.0-flash:streamGenerateContent", APIGemini, "gemini-2.0-flash"},
		{"GET", "/v1/responses", "", ""},
		{"GET", "/v1/models", "", ""},
		{"POST", "/v1/messages/count_tokens", "", ""},
		{"POST", "/v1beta/models/gemini-2.5-pro:countTokens", "", ""},
		{"POST", "/v1beta/models/:generateContent", "", ""},
		{"POST", "/v1/threads/thread_1/messages", "", ""},
		{"POST", "/v1/responses/resp_1/cancel", "", ""},
		{"POST", "/health", "", ""},
	} {
		req, err := http.NewRequest(tt.method, "https://api.test"+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if api, model := modelCallOf(req); api != tt.api || model != tt.model {
			t.Errorf("%s %s = %q %q, want %q %q", tt.method, tt.path, api, model, tt.api, tt.model)
		}
	}
}

func TestRequestModel(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{`{"model":"gpt-5","input":"hi"}`, "gpt-5"},
		{`{"messages":[{"role":"user","content":"{\"model\":\"no\"}"}],"max_tokens":5,"model":"claude"}`, "claude"},
		{`{"input":"` + strings.Repeat("x", 100) + ``, ""}, // cut before the model
		{`{"model":"gpt-5","input":"cut`, "gpt-5"},
		{`["model","x"]`, ""},
		{`{"model":5}`, ""},
		{``, ""},
	} {
		if got := requestModel([]byte(tt.body)); got != tt.want {
			t.Errorf("requestModel(%.40q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

// tapRun passes pieces of the answer to a model call to path through a
// usage tap, as the proxy reads them, and returns what came out and the
// events logged.
func tapRun(t testing.TB, path, ctype string, pieces [][]byte) ([]byte, []Event) {
	var evs []Event
	s := &Sandbox{p: &Proxy{cfg: Config{OnEvent: func(e Event) { evs = append(evs, e) }}}, log: newEventLog(0)}
	req, _ := http.NewRequest(http.MethodPost, "https://api.test"+path, nil)
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ctype}},
		Body: io.NopCloser(&piecesReader{pieces: pieces}), Request: req}
	c := newModelCall(req)
	if c == nil {
		t.Fatalf("%s is no model call", path)
	}
	c.watch(s, resp, &requestUse{tr: (*secretSet)(nil).forTarget(target{})}, Event{})
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	c.finish()
	return out, evs
}

type piecesReader struct{ pieces [][]byte }

func (r *piecesReader) Read(p []byte) (int, error) {
	for len(r.pieces) > 0 && len(r.pieces[0]) == 0 {
		r.pieces = r.pieces[1:]
	}
	if len(r.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.pieces[0])
	r.pieces[0] = r.pieces[0][n:]
	return n, nil
}

// TestUsageTapSplits: an answer read one byte at a time gives the usage
// it gives read whole, and passes unchanged.
func TestUsageTapSplits(t *testing.T) {
	for _, tc := range usageCases() {
		body := []byte(strings.Join(tc.answer.segments, ""))
		if tc.answer.status != 200 || tc.answer.cut || tc.answer.header != nil || len(body) > 1<<20 {
			continue // what the tap alone cannot tell
		}
		_, whole := tapRun(t, tc.path, tc.answer.ctype, [][]byte{bytes.Clone(body)})
		var bytewise [][]byte
		for i := range body {
			bytewise = append(bytewise, body[i:i+1:i+1])
		}
		out, split := tapRun(t, tc.path, tc.answer.ctype, bytewise)
		if !bytes.Equal(out, body) {
			t.Errorf("%s: the tap changed the bytes", tc.name)
		}
		if len(whole) != 1 || len(split) != 1 {
			t.Fatalf("%s: %d and %d events, want 1", tc.name, len(whole), len(split))
		}
		want := tc.want
		want.Model = whole[0].Usage.Model // the request's model is not in play here
		if diff := cmp.Diff(want, *whole[0].Usage); diff != "" {
			t.Errorf("%s: whole (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(*whole[0].Usage, *split[0].Usage); diff != "" {
			t.Errorf("%s: byte by byte differs from whole (-whole +split):\n%s", tc.name, diff)
		}
	}
}

// FuzzUsageTap feeds junk to the SSE and JSON readers of every API: no
// panic, the bytes pass unchanged, one event, and the same usage however
// the input is split.
func FuzzUsageTap(f *testing.F) {
	for _, tc := range usageCases() {
		body := strings.Join(tc.answer.segments, "")
		if len(body) < 1<<16 {
			f.Add([]byte(body), uint16(len(body)/2))
		}
	}
	f.Add([]byte("data: {\"usage\":{\"input_tokens\":-5}}\r\rdata: [DONE]\n\n"), uint16(3))
	f.Add([]byte(`[{"usageMetadata":{"promptTokenCount":"x"}},{"a":"\"]"}]`), uint16(7))
	f.Fuzz(func(t *testing.T, data []byte, at uint16) {
		cut := int(at) % (len(data) + 1)
		for _, path := range []string{"/v1/responses", "/v1/chat/completions", "/v1/messages", "/v1beta/models/g:streamGenerateContent"} {
			for _, ctype := range []string{ctSSE, ctJSON} {
				out, whole := tapRun(t, path, ctype, [][]byte{bytes.Clone(data)})
				_, split := tapRun(t, path, ctype, [][]byte{bytes.Clone(data[:cut]), bytes.Clone(data[cut:])})
				if !bytes.Equal(out, data) {
					t.Fatalf("%s %s: the tap changed the bytes", path, ctype)
				}
				if len(whole) != 1 || len(split) != 1 {
					t.Fatalf("%s %s: %d and %d events, want 1", path, ctype, len(whole), len(split))
				}
				if diff := cmp.Diff(*whole[0].Usage, *split[0].Usage); diff != "" {
					t.Fatalf("%s %s: split at %d differs (-whole +split):\n%s", path, ctype, cut, diff)
				}
			}
		}
	})
}

// TestSSEPastTheBound: an event past maxUsageBody is dropped whole, and
// the events after it are still read.
func TestSSEPastTheBound(t *testing.T) {
	var got []string
	r := &sseReader{onEvent: func(ev string, data []byte) { got = append(got, ev+"="+string(data)) }}
	r.feed([]byte("event: big\ndata: " + strings.Repeat("x", maxUsageBody) + "\ndata: {\"tail\":1}\n\n"))
	r.feed([]byte("event: small\r\ndata: a\r\ndata: b\r\n\r\n: comment\n\n"))
	if diff := cmp.Diff([]string{"small=a\nb"}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
