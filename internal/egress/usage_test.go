package egress

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// usageCase is one model call through an intercepted tunnel.
type usageCase struct {
	name   string
	path   string
	req    string // the request body
	answer cannedAnswer
	// seenBy is the segment whose bytes must not reach the client before
	// the usage event is logged; -1: the end of the body.
	seenBy int
	want   ModelUsage
}

const (
	ctSSE  = "text/event-stream"
	ctJSON = "application/json"
)

// okJSON is a JSON answer sent chunked: its end comes only after the
// client's last step, so a usage logged at the end would come too late.
func okJSON(body ...string) cannedAnswer {
	return cannedAnswer{status: 200, ctype: ctJSON + "; charset=utf-8", segments: body}
}

func okSSE(segs ...string) cannedAnswer {
	return cannedAnswer{status: 200, ctype: ctSSE + "; charset=utf-8", segments: segs}
}

func usageCases() []usageCase {
	chatReq := `{"model":"o4-mini","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`
	anthReq := `{"max_tokens":1024,"messages":[{"role":"user","content":[{"type":"text","text":"{\"model\":\"not this\"}"}]}],"model":"claude-req-model"}`
	respReq := `{"model":"gpt-5","input":"hi"}`
	gemini := "/v1beta/models/gemini-2.5-pro:"
	full := func(api, model string, streamed bool, in, cached, out int64, reasoning *int64) ModelUsage {
		return ModelUsage{API: api, Model: model, Streamed: streamed, InputTokens: ptr(in),
			CachedInputTokens: ptr(cached), OutputTokens: ptr(out), ReasoningTokens: reasoning}
	}
	unknown := func(api, model string, streamed bool) ModelUsage {
		return ModelUsage{API: api, Model: model, Streamed: streamed}
	}
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.String()
	}
	big := `{"id":"chatcmpl-1","model":"o4-mini-2025-04-16","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("x", maxUsageBody) + `"}}],"usage":` + chatUsage + `}`
	return []usageCase{
		{"responses json", "/v1/responses", respReq, cannedAnswer{status: 200, ctype: ctJSON, length: true, segments: []string{respJSON[:100], respJSON[100:]}}, 1,
			full(APIOpenAIResponses, "gpt-5-2025-08-07", false, 176, 1024, 300, ptr(256))},
		{"responses sse", "/v1/responses", respReq, okSSE(respSSE...), 1,
			full(APIOpenAIResponses, "gpt-5-2025-08-07", true, 176, 1024, 300, ptr(256))},
		{"chat json", "/v1/chat/completions", chatReq, okJSON(chatJSON), 0,
			full(APIOpenAIChat, "o4-mini-2025-04-16", false, 86, 1920, 300, ptr(192))},
		{"chat sse", "/v1/chat/completions", chatReq, okSSE(chatSSEHead, chatSSEUsage, chatSSEDone), 1,
			full(APIOpenAIChat, "o4-mini-2025-04-16", true, 86, 1920, 300, ptr(192))},
		{"chat sse usage on every chunk", "/v1/chat/completions", chatReq,
			okSSE(chatChunk(`{"content":"Hi"}`, "null", `{"prompt_tokens":10,"completion_tokens":1}`),
				chatChunk(`{}`, `"stop"`, `{"prompt_tokens":10,"completion_tokens":2}`), chatSSEDone), 2,
			full(APIOpenAIChat, "o4-mini-2025-04-16", true, 10, 0, 2, nil)},
		{"anthropic json", "/v1/messages", anthReq, okJSON(anthJSON), 0,
			full(APIAnthropicMessages, "claude-sonnet-4-5-20250929", false, 2060, 4096, 503, nil)},
		{"anthropic sse", "/v1/messages", anthReq, okSSE(anthStart, anthDelta, anthStop), 2,
			full(APIAnthropicMessages, "claude-sonnet-4-5-20250929", true, 2060, 4096, 503, nil)},
		{"anthropic sse input in message_delta", "/v1/messages", anthReq, okSSE(
			strings.Replace(anthStart, `"input_tokens":12`, `"input_tokens":0`, 1),
			strings.Replace(anthDelta, `"usage":{`, `"usage":{"input_tokens":40,"cache_read_input_tokens":0,`, 1), anthStop), 2,
			full(APIAnthropicMessages, "claude-sonnet-4-5-20250929", true, 2088, 4096, 503, nil)},
		{"gemini json", gemini + "generateContent", `{"contents":[]}`, okJSON(geminiJSON), 0,
			full(APIGemini, "gemini-2.5-pro", false, 904, 4096, 520, ptr(400))},
		{"gemini sse", gemini + "streamGenerateContent?alt=sse", `{"contents":[]}`,
			okSSE("data: "+geminiChunk1+"\r\n\r\n", "data: "+geminiChunk2+"\r\n\r\n"), -1,
			full(APIGemini, "gemini-2.5-pro", true, 904, 4096, 520, ptr(400))},
		{"gemini json array", gemini + "streamGenerateContent", `{"contents":[]}`,
			cannedAnswer{status: 200, ctype: ctJSON, segments: []string{"[" + geminiChunk1, ",\r\n" + geminiChunk2, "\n]"}}, 2,
			full(APIGemini, "gemini-2.5-pro", true, 904, 4096, 520, ptr(400))},

		{"chat sse without include_usage", "/v1/chat/completions", chatReq, okSSE(chatSSEHead, chatSSEDone), 1,
			unknown(APIOpenAIChat, "o4-mini-2025-04-16", true)},
		{"anthropic error status", "/v1/messages", anthReq, cannedAnswer{status: 529, ctype: ctJSON, length: true,
			segments: []string{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"usage":{"input_tokens":5}}`}}, -1,
			unknown(APIAnthropicMessages, "claude-req-model", false)},
		{"gemini error status", gemini + "generateContent", `{}`, cannedAnswer{status: 400, ctype: ctJSON, length: true,
			segments: []string{`{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`}}, -1,
			unknown(APIGemini, "gemini-2.5-pro", false)},
		{"responses sse cut", "/v1/responses", respReq, cannedAnswer{status: 200, ctype: ctSSE, segments: respSSE[:1], cut: true}, -1,
			unknown(APIOpenAIResponses, "gpt-5-2025-08-07", true)},
		{"anthropic sse cut after message_delta", "/v1/messages", anthReq, cannedAnswer{status: 200, ctype: ctSSE,
			segments: []string{anthStart, anthDelta}, cut: true}, -1,
			unknown(APIAnthropicMessages, "claude-sonnet-4-5-20250929", true)},
		{"chat json cut", "/v1/chat/completions", chatReq, cannedAnswer{status: 200, ctype: ctJSON, length: true,
			segments: []string{chatJSON[:len(chatJSON)-2]}, cut: true}, -1,
			unknown(APIOpenAIChat, "o4-mini", false)},
		{"chat json gzip", "/v1/chat/completions", chatReq, cannedAnswer{status: 200, ctype: ctJSON, length: true,
			header: map[string]string{"Content-Encoding": "gzip"}, segments: []string{gz(chatJSON)}}, -1,
			unknown(APIOpenAIChat, "o4-mini", false)},
		{"chat json past the bound", "/v1/chat/completions", chatReq, okJSON(big), -1,
			unknown(APIOpenAIChat, "o4-mini", false)},
		{"responses json without usage", "/v1/responses", respReq, okJSON(`{"id":"resp_1","model":"gpt-5-2025-08-07","usage":null}`), -1,
			unknown(APIOpenAIResponses, "gpt-5-2025-08-07", false)},
	}
}

func TestModelUsage(t *testing.T) {
	for _, tc := range usageCases() {
		t.Run(tc.name, func(t *testing.T) { runUsageCase(t, tc) })
	}
}

func runUsageCase(t *testing.T, tc usageCase) {
	up := newModelUpstream(tc.answer)
	e := newMitmEnv(t, mitmOptions{upstream: up})
	e.setSecrets(e.keyBinding())
	c := e.client(e.sandboxRoots())
	c.Transport.(*http.Transport).DisableCompression = true // the bytes as they come
	c.Timeout = 30 * time.Second                            // a proxy holding bytes back stalls the lockstep
	req, _ := http.NewRequest(http.MethodPost, e.url(mitmBound, tc.path), strings.NewReader(tc.req))
	req.Header.Set("Authorization", "Bearer "+mitmPhKey)
	req.Header.Set("Content-Type", ctJSON)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != tc.answer.status {
		t.Errorf("status %d, want %d", resp.StatusCode, tc.answer.status)
	}
	for i, seg := range tc.answer.segments {
		got := make([]byte, len(seg))
		if _, err := io.ReadFull(resp.Body, got); err != nil {
			t.Fatalf("reading segment %d before the upstream sends the next: %v", i, err)
		}
		if string(got) != seg {
			t.Errorf("segment %d reached the client changed:\n got %.200q\nwant %.200q", i, got, seg)
		}
		if i == tc.seenBy {
			if n := len(kindEvents(e.events.all(), KindModelUsage)); n != 1 {
				t.Errorf("the client holds the usage's bytes and %d usage events are logged, want 1", n)
			}
		}
		up.next(t)
	}
	rest, err := io.ReadAll(resp.Body)
	switch {
	case tc.answer.cut && err == nil:
		t.Error("a cut answer reached the client whole")
	case !tc.answer.cut && (err != nil || len(rest) > 0):
		t.Errorf("after the segments: %q, %v", rest, err)
	}
	if tc.seenBy < 0 {
		if n := len(kindEvents(e.events.all(), KindModelUsage)); n != 1 {
			t.Errorf("the client read the body's end and %d usage events are logged, want 1", n)
		}
	}
	// The request's own event is logged after the usage; then there
	// must be exactly one usage event.
	e.events.wait(t, "request", func(e Event) bool { return e.Protocol == "https" && e.Kind == "" })
	evs := kindEvents(e.events.all(), KindModelUsage)
	if len(evs) != 1 {
		t.Fatalf("%d usage events, want 1: %+v", len(evs), evs)
	}
	ev := evs[0]
	if diff := cmp.Diff(tc.want, *ev.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	wantEv := mitmEv{KindModelUsage, "API_KEY", "https", mitmBound, e.tlsPort, Allowed, "", tc.answer.status}
	if diff := cmp.Diff(wantEv, mitmSummary(ev)); diff != "" {
		t.Errorf("usage event (-want +got):\n%s", diff)
	}
	if ev.DurationMS <= 0 {
		t.Errorf("duration %v", ev.DurationMS)
	}
	b, _ := json.Marshal(ev)
	if tc.want.InputTokens == nil && !bytes.Contains(b, []byte(`"input_tokens":null,"cached_input_tokens":null,"output_tokens":null,"reasoning_tokens":null`)) {
		t.Errorf("unknown usage is not null in %s", b)
	}
	seen := up.seen()
	if len(seen) != 1 || seen[0].Header.Get("Accept-Encoding") != "identity" || seen[0].Body != tc.req {
		t.Errorf("the upstream saw %+v, want the request with Accept-Encoding: identity", seen)
	}
}

func kindEvents(evs []Event, kind string) []Event {
	var out []Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// TestModelUsageOnlyModelCalls: listing models or counting tokens on a
// model API host is no model call.
func TestModelUsageOnlyModelCalls(t *testing.T) {
	up := newModelUpstream(okJSON(chatJSON))
	e := newMitmEnv(t, mitmOptions{upstream: up})
	e.setSecrets(e.keyBinding())
	c := e.client(e.sandboxRoots())
	mitmDo(t, c, mitmGet(t, e.url(mitmBound, "/v1/models"), "Authorization", "Bearer "+mitmPhKey))
	req, _ := http.NewRequest(http.MethodPost, e.url(mitmBound, "/v1/messages/count_tokens"), strings.NewReader(`{"model":"m"}`))
	mitmDo(t, c, req)
	e.waitRequests(2)
	if evs := kindEvents(e.events.all(), KindModelUsage); len(evs) != 0 {
		t.Errorf("usage events for calls that are no model calls: %+v", evs)
	}
}

// waitRequests waits for n request events of the intercepted tunnel.
func (e *mitmEnv) waitRequests(n int) { e.waitKind("", n) }

// waitKind waits for n events of the intercepted tunnel of kind: some
// are logged after the answer reached the client.
func (e *mitmEnv) waitKind(kind string, n int) {
	e.t.Helper()
	seen := 0
	e.events.wait(e.t, fmt.Sprintf("%d %q", n, kind), func(ev Event) bool {
		if ev.Protocol == "https" && ev.Kind == kind && ev.Status != 0 {
			seen++
		}
		return seen == n
	})
}
