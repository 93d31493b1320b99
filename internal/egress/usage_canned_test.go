package egress

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Canned answers in the shapes the APIs document, with cached and
// reasoning tokens, split where a real upstream would flush.
var (
	respJSON = `{"id":"resp_1","object":"response","created_at":1741476542,"status":"completed","model":"gpt-5-2025-08-07",` +
		`"output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi {there}","annotations":[]}]}],` +
		`"usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1024},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":256},"total_tokens":1500}}`

	respSSE = []string{
		"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-5-2025-08-07\",\"usage\":null}}\n\n" +
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi\"}\n\n",
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"gpt-5-2025-08-07\"," +
			"\"usage\":{\"input_tokens\":1200,\"input_tokens_details\":{\"cached_tokens\":1024},\"output_tokens\":300,\"output_tokens_details\":{\"reasoning_tokens\":256},\"total_tokens\":1500}}}\n\n",
	}

	chatJSON = `{"id":"chatcmpl-1","object":"chat.completion","created":1741570283,"model":"o4-mini-2025-04-16",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":192,"audio_tokens":0}}}`

	chatChunk = func(delta, finish, usage string) string {
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"o4-mini-2025-04-16",` +
			`"choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}],"usage":` + usage + "}\n\n"
	}
	chatUsage    = `{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920},"completion_tokens_details":{"reasoning_tokens":192}}`
	chatSSEHead  = chatChunk(`{"role":"assistant","content":"Hi"}`, "null", "null") + chatChunk(`{}`, `"stop"`, "null")
	chatSSEUsage = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570283,"model":"o4-mini-2025-04-16","choices":[],"usage":` + chatUsage + "}\n\n"
	chatSSEDone  = "data: [DONE]\n\n"

	anthJSON = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hi"}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":2048,"cache_read_input_tokens":4096,"output_tokens":503}}`

	anthStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5-20250929\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null," +
		"\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":2048,\"cache_read_input_tokens\":4096,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: ping\ndata: {\"type\": \"ping\"}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
	anthDelta = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":503}}\n\n"
	anthStop  = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

	geminiJSON = `{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":5000,"candidatesTokenCount":120,"totalTokenCount":5520,"cachedContentTokenCount":4096,"thoughtsTokenCount":400,` +
		`"promptTokensDetails":[{"modality":"TEXT","tokenCount":5000}]},"modelVersion":"gemini-2.5-pro","responseId":"abc"}`
	geminiChunk1 = `{"candidates":[{"content":{"parts":[{"text":"H"}],"role":"model"},"index":0}],` +
		`"usageMetadata":{"promptTokenCount":5000,"candidatesTokenCount":1,"totalTokenCount":5401,"cachedContentTokenCount":4096,"thoughtsTokenCount":400},"modelVersion":"gemini-2.5-pro"}`
	geminiChunk2 = `{"candidates":[{"content":{"parts":[{"text":"i"}],"role":"model"},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":5000,"candidatesTokenCount":120,"totalTokenCount":5520,"cachedContentTokenCount":4096,"thoughtsTokenCount":400},"modelVersion":"gemini-2.5-pro"}`
)

// cannedAnswer is what the model upstream answers.
type cannedAnswer struct {
	status   int
	ctype    string
	header   map[string]string
	segments []string
	length   bool // send a Content-Length (else chunked)
	cut      bool // end the connection before the body's end
}

// modelUpstream answers every request with its answer, one segment at a
// time: after each it waits for the client's step (unless step is nil),
// so a proxy that held a segment back would stall the test.
type modelUpstream struct {
	answer cannedAnswer
	step   chan struct{}

	mu   sync.Mutex
	reqs []mitmSeenReq
}

func newModelUpstream(a cannedAnswer) *modelUpstream {
	return &modelUpstream{answer: a, step: make(chan struct{})}
}

func (u *modelUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.reqs = append(u.reqs, mitmSeenReq{Host: r.URL.Path, Header: r.Header.Clone(), Body: string(body)})
	u.mu.Unlock()
	switch r.URL.Path {
	case "/v1/models":
		io.WriteString(w, `{"object":"list","data":[]}`)
		return
	case "/v1/messages/count_tokens":
		io.WriteString(w, `{"input_tokens":12}`)
		return
	}
	a := u.answer
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", a.ctype)
	if a.length {
		n := len(strings.Join(a.segments, ""))
		if a.cut {
			n += 100
		}
		w.Header().Set("Content-Length", strconv.Itoa(n))
	}
	w.WriteHeader(a.status)
	for _, seg := range a.segments {
		io.WriteString(w, seg)
		http.NewResponseController(w).Flush()
		if u.step == nil {
			continue
		}
		select {
		case <-u.step:
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Second):
			return
		}
	}
	if a.cut {
		panic(http.ErrAbortHandler) // the connection ends mid-body
	}
}

func (u *modelUpstream) seen() []mitmSeenReq {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]mitmSeenReq(nil), u.reqs...)
}

// next lets the upstream send its next segment (or end).
func (u *modelUpstream) next(t *testing.T) {
	t.Helper()
	select {
	case u.step <- struct{}{}:
	case <-time.After(20 * time.Second):
		t.Fatal("the upstream did not wait for a step")
	}
}
