package modelmock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sseEvent is one server-sent event: its name ("" for none) and data.
type sseEvent struct {
	name string
	data string
}

func post(t *testing.T, srv *httptest.Server, path string, header map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %s: %s", path, resp.Status, b)
	}
	return resp
}

func decode[T any](t *testing.T, r io.Reader) T {
	t.Helper()
	var v T
	if err := json.NewDecoder(r).Decode(&v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return v
}

func readSSE(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var evs []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			evs = append(evs, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("bad SSE line %q", line)
		}
	}
	return evs
}

func names(evs []sseEvent) []string {
	var n []string
	for _, e := range evs {
		n = append(n, e.name)
	}
	return n
}

// Request bodies, each as a harness would send it.
const (
	codexTools  = `"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"},"workdir":{"type":"string"}}}},{"type":"web_search"}]`
	claudeTools = `"tools":[{"name":"Read","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}}},{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]`
	chatTools   = `"tools":[{"type":"function","function":{"name":"shell","parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}}}}}]`

	responsesFirst = `{"model":"m","stream":%s,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}],` + codexTools + `}`
	responsesAfter = `{"model":"m","stream":%s,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok"}],` + codexTools + `}`
	chatFirst      = `{"model":"m","stream":%s,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"go"}],` + chatTools + `}`
	chatAfter      = `{"model":"m","stream":%s,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}],` + chatTools + `}`
	messagesFirst  = `{"model":"m","max_tokens":100,"stream":%s,"messages":[{"role":"user","content":"go"}],` + claudeTools + `}`
	messagesAfter  = `{"model":"m","max_tokens":100,"stream":%s,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"x"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}],` + claudeTools + `}`
)

func body(format, stream string) string { return strings.Replace(format, "%s", stream, 1) }

func newServer(t *testing.T, s Script) (*Mock, *httptest.Server) {
	m := New(s)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, srv
}

// responsesOutput is the part of a Responses API response the tests read.
type responsesOutput struct {
	Object string `json:"object"`
	Status string `json:"status"`
	Output []struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		CallID    string `json:"call_id"`
		Arguments string `json:"arguments"`
		Input     string `json:"input"`
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func checkResponsesToolCall(t *testing.T, r responsesOutput, name, args string) {
	t.Helper()
	if r.Status != "completed" || len(r.Output) != 1 {
		t.Fatalf("response %+v", r)
	}
	o := r.Output[0]
	if o.Type != "function_call" || o.Name != name || o.CallID == "" {
		t.Errorf("output %+v, want a function_call of %s", o, name)
	}
	if d := cmp.Diff(args, o.Arguments); d != "" {
		t.Errorf("arguments (-want +got):\n%s", d)
	}
	if r.Usage.InputTokens <= 0 || r.Usage.OutputTokens <= 0 || r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens {
		t.Errorf("usage %+v", r.Usage)
	}
}

func checkResponsesText(t *testing.T, r responsesOutput, text string) {
	t.Helper()
	if len(r.Output) != 1 || r.Output[0].Type != "message" || len(r.Output[0].Content) != 1 ||
		r.Output[0].Content[0].Type != "output_text" || r.Output[0].Content[0].Text != text {
		t.Errorf("output %+v, want the message %q", r.Output, text)
	}
	if r.Usage.OutputTokens <= 0 {
		t.Errorf("usage %+v", r.Usage)
	}
}

func TestResponses(t *testing.T) {
	_, srv := newServer(t, Script{})
	const args = `{"cmd":"echo fixed \u003e answer.txt"}`

	r := decode[responsesOutput](t, post(t, srv, "/v1/responses", nil, body(responsesFirst, "false")).Body)
	if r.Object != "response" {
		t.Errorf("object %q", r.Object)
	}
	checkResponsesToolCall(t, r, "exec_command", args)
	checkResponsesText(t, decode[responsesOutput](t, post(t, srv, "/v1/responses", nil, body(responsesAfter, "false")).Body), "done")
}

func TestResponsesStream(t *testing.T) {
	_, srv := newServer(t, Script{})
	for _, tt := range []struct {
		body  string
		names []string
		check func(responsesOutput)
	}{
		{body(responsesFirst, "true"), []string{
			"response.created", "response.in_progress", "response.output_item.added",
			"response.function_call_arguments.delta", "response.function_call_arguments.done",
			"response.output_item.done", "response.completed",
		}, func(r responsesOutput) {
			checkResponsesToolCall(t, r, "exec_command", `{"cmd":"echo fixed \u003e answer.txt"}`)
		}},
		{body(responsesAfter, "true"), []string{
			"response.created", "response.in_progress", "response.output_item.added",
			"response.content_part.added", "response.output_text.delta", "response.output_text.done",
			"response.content_part.done", "response.output_item.done", "response.completed",
		}, func(r responsesOutput) { checkResponsesText(t, r, "done") }},
	} {
		evs := readSSE(t, post(t, srv, "/v1/responses", nil, tt.body))
		if d := cmp.Diff(tt.names, names(evs)); d != "" {
			t.Fatalf("events (-want +got):\n%s", d)
		}
		var deltas string
		for i, e := range evs {
			var d struct {
				Type     string          `json:"type"`
				Seq      int             `json:"sequence_number"`
				Delta    string          `json:"delta"`
				Response responsesOutput `json:"response"`
			}
			if err := json.Unmarshal([]byte(e.data), &d); err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			if d.Type != e.name || d.Seq != i {
				t.Errorf("event %d: type %q sequence %d", i, d.Type, d.Seq)
			}
			deltas += d.Delta
			if e.name == "response.completed" {
				tt.check(d.Response)
			}
		}
		if deltas == "" {
			t.Error("no deltas")
		}
	}
}

// The tool's argument format follows its declared schema, and a request
// with no shell-like tool gets the final text at once.
func TestResponsesToolShapes(t *testing.T) {
	_, srv := newServer(t, Script{Command: "true"})
	for _, tt := range []struct {
		name, tools string
		want        map[string]any
	}{
		{"shell argv", `[{"type":"function","name":"shell","parameters":{"properties":{"command":{"type":"array"}}}}]`,
			map[string]any{"type": "function_call", "name": "shell", "arguments": `{"command":["bash","-lc","true"]}`}},
		{"local_shell", `[{"type":"local_shell"}]`,
			map[string]any{"type": "local_shell_call", "action": map[string]any{"type": "exec", "command": []any{"bash", "-lc", "true"}, "env": map[string]any{}}}},
		{"no shell", `[{"type":"function","name":"view_image","parameters":{}}]`,
			map[string]any{"type": "message"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := `{"model":"m","input":"go","tools":` + tt.tools + `}`
			r := decode[struct{ Output []map[string]any }](t, post(t, srv, "/v1/responses", nil, b).Body)
			if len(r.Output) != 1 {
				t.Fatalf("output %v", r.Output)
			}
			for k, v := range tt.want {
				if d := cmp.Diff(v, r.Output[0][k]); d != "" {
					t.Errorf("%s (-want +got):\n%s", k, d)
				}
			}
		})
	}
}

// Codex's code mode offers no shell function, only a JavaScript "exec"
// tool (in a namespace of an additional_tools input item) whose nested
// exec_command runs the shell.
func TestResponsesCodeMode(t *testing.T) {
	_, srv := newServer(t, Script{Command: `echo "hi"`})
	b := `{"model":"m","input":[{"type":"additional_tools","tools":[{"type":"namespace","name":"functions","tools":[` +
		`{"type":"custom","name":"exec","description":"Run JavaScript. For example ` + "`await tools.exec_command(...)`" + `"}]}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}]}`
	r := decode[responsesOutput](t, post(t, srv, "/v1/responses", nil, b).Body)
	if len(r.Output) != 1 || r.Output[0].Type != "custom_tool_call" || r.Output[0].Name != "exec" {
		t.Fatalf("output %+v", r.Output)
	}
	if want := "const r = await tools.exec_command({cmd: \"echo \\\"hi\\\"\"});\ntext(r);\n"; r.Output[0].Input != want {
		t.Errorf("input %q, want %q", r.Output[0].Input, want)
	}
}

type chatOutput struct {
	Object  string `json:"object"`
	Choices []struct {
		Message struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func TestChat(t *testing.T) {
	_, srv := newServer(t, Script{})
	r := decode[chatOutput](t, post(t, srv, "/v1/chat/completions", nil, body(chatFirst, "false")).Body)
	if r.Object != "chat.completion" || len(r.Choices) != 1 || r.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("response %+v", r)
	}
	msg := r.Choices[0].Message
	if msg.Content != nil || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Type != "function" || msg.ToolCalls[0].Function.Name != "shell" {
		t.Fatalf("message %+v", msg)
	}
	if d := cmp.Diff(`{"command":["bash","-lc","echo fixed \u003e answer.txt"]}`, msg.ToolCalls[0].Function.Arguments); d != "" {
		t.Errorf("arguments (-want +got):\n%s", d)
	}
	if r.Usage.TotalTokens == 0 || r.Usage.TotalTokens != r.Usage.PromptTokens+r.Usage.CompletionTokens {
		t.Errorf("usage %+v", r.Usage)
	}

	r = decode[chatOutput](t, post(t, srv, "/v1/chat/completions", nil, body(chatAfter, "false")).Body)
	if len(r.Choices) != 1 || r.Choices[0].FinishReason != "stop" || r.Choices[0].Message.Content == nil || *r.Choices[0].Message.Content != "done" {
		t.Errorf("response %+v", r)
	}
}

// chatStream folds a Chat Completions stream the way a client does.
type chatStream struct {
	role, content, callID, name, args, finish string
	usage                                     int
	done                                      bool
}

func foldChat(t *testing.T, evs []sseEvent) chatStream {
	t.Helper()
	var s chatStream
	for _, e := range evs {
		if e.name != "" {
			t.Errorf("chat event named %q", e.name)
		}
		if e.data == "[DONE]" {
			s.done = true
			continue
		}
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role      string `json:"role"`
					Content   string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				Total int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e.data), &c); err != nil || c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %s: %v", e.data, err)
		}
		if c.Usage != nil {
			s.usage = c.Usage.Total
		}
		for _, ch := range c.Choices {
			s.role += ch.Delta.Role
			s.content += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				s.callID += tc.ID
				s.name += tc.Function.Name
				s.args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				s.finish = *ch.FinishReason
			}
		}
	}
	return s
}

func TestChatStream(t *testing.T) {
	_, srv := newServer(t, Script{})
	s := foldChat(t, readSSE(t, post(t, srv, "/v1/chat/completions", nil, body(chatFirst, "true"))))
	if s.role != "assistant" || s.name != "shell" || s.callID == "" || s.finish != "tool_calls" || s.usage == 0 || !s.done {
		t.Errorf("tool call stream %+v", s)
	}
	if d := cmp.Diff(`{"command":["bash","-lc","echo fixed \u003e answer.txt"]}`, s.args); d != "" {
		t.Errorf("arguments (-want +got):\n%s", d)
	}
	s = foldChat(t, readSSE(t, post(t, srv, "/v1/chat/completions", nil, body(chatAfter, "true"))))
	if s.content != "done" || s.finish != "stop" || s.usage == 0 || !s.done {
		t.Errorf("final stream %+v", s)
	}
}

type messagesOutput struct {
	Type       string `json:"type"`
	Role       string `json:"role"`
	StopReason string `json:"stop_reason"`
	Content    []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

var anthropicHeaders = map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}

func TestMessages(t *testing.T) {
	_, srv := newServer(t, Script{})
	r := decode[messagesOutput](t, post(t, srv, "/v1/messages", anthropicHeaders, body(messagesFirst, "false")).Body)
	if r.Type != "message" || r.Role != "assistant" || r.StopReason != "tool_use" || len(r.Content) != 1 {
		t.Fatalf("response %+v", r)
	}
	c := r.Content[0]
	if c.Type != "tool_use" || c.Name != "Bash" || !strings.HasPrefix(c.ID, "toolu_") || string(c.Input) != `{"command":"echo fixed \u003e answer.txt"}` {
		t.Errorf("content %+v (input %s)", c, c.Input)
	}
	if r.Usage.InputTokens <= 0 || r.Usage.OutputTokens <= 0 {
		t.Errorf("usage %+v", r.Usage)
	}

	r = decode[messagesOutput](t, post(t, srv, "/v1/messages", anthropicHeaders, body(messagesAfter, "false")).Body)
	if r.StopReason != "end_turn" || len(r.Content) != 1 || r.Content[0].Type != "text" || r.Content[0].Text != "done" {
		t.Errorf("response %+v", r)
	}
}

// foldMessages folds a Messages stream the way a client does: the
// message from message_start, each block from its start and deltas, the
// stop reason and output usage from message_delta.
func foldMessages(t *testing.T, evs []sseEvent) (messagesOutput, string) {
	t.Helper()
	var msg messagesOutput
	var partial string
	for _, e := range evs {
		var d struct {
			Type         string          `json:"type"`
			Message      messagesOutput  `json:"message"`
			ContentBlock json.RawMessage `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e.data), &d); err != nil || d.Type != e.name {
			t.Fatalf("event %s %s: %v", e.name, e.data, err)
		}
		switch e.name {
		case "message_start":
			msg = d.Message
		case "content_block_start":
			var b messagesOutput
			json.Unmarshal([]byte(`{"content":[`+string(d.ContentBlock)+`]}`), &b)
			msg.Content = append(msg.Content, b.Content...)
		case "content_block_delta":
			last := &msg.Content[len(msg.Content)-1]
			last.Text += d.Delta.Text
			partial += d.Delta.PartialJSON
		case "message_delta":
			msg.StopReason = d.Delta.StopReason
			msg.Usage.OutputTokens = d.Usage.OutputTokens
		}
	}
	return msg, partial
}

func TestMessagesStream(t *testing.T) {
	_, srv := newServer(t, Script{Command: "ls", Final: "all good"})
	want := []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}

	evs := readSSE(t, post(t, srv, "/v1/messages", anthropicHeaders, body(messagesFirst, "true")))
	if d := cmp.Diff(want, names(evs)); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	msg, input := foldMessages(t, evs)
	if msg.StopReason != "tool_use" || len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" || msg.Content[0].Name != "Bash" || input != `{"command":"ls"}` {
		t.Errorf("tool call %+v input %s", msg, input)
	}
	if msg.Usage.InputTokens <= 0 || msg.Usage.OutputTokens <= 1 {
		t.Errorf("usage %+v", msg.Usage)
	}

	evs = readSSE(t, post(t, srv, "/v1/messages", anthropicHeaders, body(messagesAfter, "true")))
	msg, _ = foldMessages(t, evs)
	if msg.StopReason != "end_turn" || len(msg.Content) != 1 || msg.Content[0].Text != "all good" {
		t.Errorf("final %+v", msg)
	}
}

func TestOtherRoutes(t *testing.T) {
	_, srv := newServer(t, Script{})
	r := decode[struct {
		InputTokens int `json:"input_tokens"`
	}](t, post(t, srv, "/v1/messages/count_tokens", anthropicHeaders, body(messagesFirst, "false")).Body)
	if r.InputTokens <= 0 {
		t.Errorf("count_tokens %d", r.InputTokens)
	}

	get := func(path string, header map[string]string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, b := get("/v1/models", nil); code != 200 || !bytes.Contains(b, []byte(`"object":"list"`)) {
		t.Errorf("OpenAI models: %d %s", code, b)
	}
	if code, b := get("/v1/models", anthropicHeaders); code != 200 || !bytes.Contains(b, []byte(`"has_more":false`)) {
		t.Errorf("Anthropic models: %d %s", code, b)
	}
	// The calls a harness makes besides the model (settings, telemetry)
	// get the API's 404, in its error shape.
	if code, b := get("/api/claude_code/settings", anthropicHeaders); code != 404 || !bytes.Contains(b, []byte(`"type":"error"`)) {
		t.Errorf("Anthropic 404: %d %s", code, b)
	}
	if code, b := get("/backend-api/plugins/export/curated", nil); code != 404 || !bytes.Contains(b, []byte(`"error":{"code":null`)) {
		t.Errorf("OpenAI 404: %d %s", code, b)
	}
}

func TestRequestsRecorded(t *testing.T) {
	m, srv := newServer(t, Script{})
	post(t, srv, "/v1/responses", map[string]string{"Authorization": "Bearer sk-real"}, body(responsesFirst, "false"))
	post(t, srv, "/v1/messages?beta=true", anthropicHeaders, body(messagesAfter, "false"))

	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if r := reqs[0]; r.Method != "POST" || r.Path != "/v1/responses" || r.Header.Get("Authorization") != "Bearer sk-real" || string(r.Body) != body(responsesFirst, "false") {
		t.Errorf("first request %+v", r)
	}
	if r := reqs[1]; r.Path != "/v1/messages" || r.Query != "beta=true" || r.Header.Get("X-Api-Key") != "sk-ant-test" {
		t.Errorf("second request %+v", r)
	}
}

func TestBadRequest(t *testing.T) {
	_, srv := newServer(t, Script{})
	for _, path := range []string{"/v1/responses", "/v1/chat/completions", "/v1/messages"} {
		resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader("{"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s", path, resp.Status)
		}
	}
}

// FuzzMock feeds any body to every route: the mock must answer, never
// panic, and a 200 JSON answer must be valid JSON.
func FuzzMock(f *testing.F) {
	for _, b := range []string{body(responsesFirst, "false"), body(chatAfter, "true"), body(messagesFirst, "true"), `{"input":[{"type":"additional_tools","tools":[{"type":"namespace","tools":[{}]}]}]}`} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b string) {
		m := New(Script{})
		for _, path := range []string{"/v1/responses", "/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens"} {
			rec := httptest.NewRecorder()
			m.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(b)))
			if rec.Code == http.StatusOK && rec.Header().Get("Content-Type") == "application/json" && !json.Valid(rec.Body.Bytes()) {
				t.Errorf("%s: invalid JSON %s", path, rec.Body)
			}
		}
	})
}
