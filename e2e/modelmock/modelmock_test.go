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
	for _, path := range []string{"/v1/responses", "/v1/chat/completions", "/v1/messages", "/v1beta/models/m:streamGenerateContent"} {
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
	for _, b := range []string{body(responsesFirst, "false"), body(chatAfter, "true"), body(messagesFirst, "true"), `{"input":[{"type":"additional_tools","tools":[{"type":"namespace","tools":[{}]}]}]}`, geminiFirst, geminiAfter} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b string) {
		m := New(Script{})
		for _, path := range []string{"/v1/responses", "/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens",
			"/v1beta/models/m:generateContent", "/v1beta/models/m:streamGenerateContent", "/v1beta/models/m:countTokens"} {
			rec := httptest.NewRecorder()
			m.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(b)))
			if rec.Code == http.StatusOK && rec.Header().Get("Content-Type") == "application/json" && !json.Valid(rec.Body.Bytes()) {
				t.Errorf("%s: invalid JSON %s", path, rec.Body)
			}
		}
	})
}

// Gemini request bodies, as Gemini CLI sends them (its tools' schemas in
// parametersJsonSchema).
const (
	geminiTools = `"tools":[{"functionDeclarations":[{"name":"read_file","parametersJsonSchema":{"type":"object","properties":{"file_path":{"type":"string"}}}},` +
		`{"name":"run_shell_command","parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"}}}}]}]`
	geminiFirst = `{"contents":[{"role":"user","parts":[{"text":"go"}]}],"systemInstruction":{"parts":[{"text":"be good"}]},` + geminiTools + `}`
	geminiAfter = `{"contents":[{"role":"user","parts":[{"text":"go"}]},` +
		`{"role":"model","parts":[{"functionCall":{"id":"c1","name":"run_shell_command","args":{"command":"x"}},"thoughtSignature":"skip"}]},` +
		`{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"ok"}}}]}],` + geminiTools + `}`
)

var geminiHeaders = map[string]string{"x-goog-api-key": "AIza-test"}

// geminiResponse is the part of a GenerateContentResponse the tests read.
type geminiResponse struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         string `json:"text"`
				FunctionCall *struct {
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata map[string]int64 `json:"usageMetadata"`
	ModelVersion  string           `json:"modelVersion"`
}

func TestGemini(t *testing.T) {
	_, srv := newServer(t, Script{})
	const path = "/gemini/v1beta/models/gemini-2.5-pro:generateContent"
	r := decode[geminiResponse](t, post(t, srv, path, geminiHeaders, geminiFirst).Body)
	if len(r.Candidates) != 1 || len(r.Candidates[0].Content.Parts) != 1 || r.Candidates[0].Content.Role != "model" ||
		r.Candidates[0].FinishReason != "STOP" || r.ModelVersion != "gemini-2.5-pro" {
		t.Fatalf("response %+v", r)
	}
	fc := r.Candidates[0].Content.Parts[0].FunctionCall
	if fc == nil || fc.Name != "run_shell_command" || string(fc.Args) != `{"command":"echo fixed \u003e answer.txt"}` {
		t.Errorf("part %+v, want a run_shell_command call", r.Candidates[0].Content.Parts[0])
	}
	if u := r.UsageMetadata; u["promptTokenCount"] <= 0 || u["candidatesTokenCount"] != toolCallTokens ||
		u["totalTokenCount"] != u["promptTokenCount"]+u["candidatesTokenCount"] {
		t.Errorf("usageMetadata %v", u)
	}

	r = decode[geminiResponse](t, post(t, srv, path, geminiHeaders, geminiAfter).Body)
	if len(r.Candidates) != 1 || r.Candidates[0].Content.Parts[0].Text != "done" || r.Candidates[0].Content.Parts[0].FunctionCall != nil {
		t.Errorf("after the tool's result: %+v", r)
	}
	// The OpenAPI-subset "parameters" names the shell tool as well, and a
	// request with no shell tool gets the text.
	b := `{"contents":[{"role":"user","parts":[{"text":"go"}]}],"tools":[{"functionDeclarations":[{"name":"shell","parameters":{"type":"OBJECT","properties":{"command":{"type":"ARRAY"}}}}]}]}`
	r = decode[geminiResponse](t, post(t, srv, path, geminiHeaders, b).Body)
	if fc := r.Candidates[0].Content.Parts[0].FunctionCall; fc == nil || fc.Name != "shell" {
		t.Errorf("parameters schema: %+v", r)
	}
	r = decode[geminiResponse](t, post(t, srv, path, geminiHeaders, `{"contents":[{"role":"user","parts":[{"text":"title?"}]}]}`).Body)
	if r.Candidates[0].Content.Parts[0].Text != "done" {
		t.Errorf("no tools: %+v", r)
	}
}

// foldGemini folds streamed chunks the way the Gemini SDK does: the
// parts' text joined, the calls collected, the last usageMetadata.
func foldGemini(chunks []geminiResponse) (text string, calls []string, usage map[string]int64, finish string) {
	for _, c := range chunks {
		for _, cand := range c.Candidates {
			for _, p := range cand.Content.Parts {
				text += p.Text
				if p.FunctionCall != nil {
					calls = append(calls, p.FunctionCall.Name+string(p.FunctionCall.Args))
				}
			}
			if cand.FinishReason != "" {
				finish = cand.FinishReason
			}
		}
		if c.UsageMetadata != nil {
			usage = c.UsageMetadata
		}
	}
	return text, calls, usage, finish
}

func TestGeminiStream(t *testing.T) {
	_, srv := newServer(t, Script{Command: "ls", Final: "all good"})
	const path = "/v1beta/models/m:streamGenerateContent"
	sseChunks := func(body string) []geminiResponse {
		var chunks []geminiResponse
		for _, e := range readSSE(t, post(t, srv, path+"?alt=sse", geminiHeaders, body)) {
			var c geminiResponse
			if err := json.Unmarshal([]byte(e.data), &c); err != nil || e.name != "" {
				t.Fatalf("event %q %s: %v", e.name, e.data, err)
			}
			chunks = append(chunks, c)
		}
		return chunks
	}

	text, calls, usage, finish := foldGemini(sseChunks(geminiFirst))
	if text != "" || len(calls) != 1 || calls[0] != `run_shell_command{"command":"ls"}` || finish != "STOP" {
		t.Errorf("tool call stream: text %q calls %q finish %q", text, calls, finish)
	}
	if usage["candidatesTokenCount"] != toolCallTokens || usage["totalTokenCount"] != usage["promptTokenCount"]+toolCallTokens {
		t.Errorf("usage %v", usage)
	}
	chunks := sseChunks(geminiAfter)
	if text, calls, _, _ := foldGemini(chunks); len(chunks) < 2 || text != "all good" || calls != nil {
		t.Errorf("final stream: %d chunks, text %q, calls %q", len(chunks), text, calls)
	}

	// Without alt=sse the stream is one JSON array of the chunks.
	arr := decode[[]geminiResponse](t, post(t, srv, path, geminiHeaders, geminiAfter).Body)
	if text, _, usage, _ := foldGemini(arr); text != "all good" || usage["promptTokenCount"] <= 0 {
		t.Errorf("JSON array stream %+v", arr)
	}
}

func TestGeminiOtherRoutes(t *testing.T) {
	_, srv := newServer(t, Script{})
	r := decode[struct {
		TotalTokens int `json:"totalTokens"`
	}](t, post(t, srv, "/v1beta/models/m:countTokens", geminiHeaders, geminiFirst).Body)
	if r.TotalTokens <= 0 {
		t.Errorf("countTokens %d", r.TotalTokens)
	}
	get := func(path string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("x-goog-api-key", "AIza-test")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, b := get("/v1beta/models"); code != 200 || !bytes.Contains(b, []byte(`"name":"models/mock"`)) {
		t.Errorf("models: %d %s", code, b)
	}
	if code, b := get("/v1beta/models/gemini-2.5-pro"); code != 200 || !bytes.Contains(b, []byte(`"name":"models/gemini-2.5-pro"`)) {
		t.Errorf("model: %d %s", code, b)
	}
	// Errors come in Gemini's shape: code, message, status.
	resp, err := srv.Client().Post(srv.URL+"/v1beta/models/m:generateContent?key=AIza-test", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	e := decode[struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}](t, resp.Body)
	if resp.StatusCode != 400 || e.Error.Code != 400 || e.Error.Status != "INVALID_ARGUMENT" || e.Error.Message == "" {
		t.Errorf("bad request: %s %+v", resp.Status, e)
	}
	if code, b := get("/v1beta/files"); code != 404 || !bytes.Contains(b, []byte(`"status":"NOT_FOUND"`)) {
		t.Errorf("404: %d %s", code, b)
	}
}

// jsonValue decodes s for a comparison of JSON values.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// field is the value at a path of object keys in v, nil if it is not
// there.
func field(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// usageCase is one API shape: a request, and where its answer (an
// object, or a stream's events by name, "" for unnamed) reports usage.
type usageCase struct {
	name, path string
	header     map[string]string
	body       string
	stream     bool
	// usage picks the reported usage from the answer: one JSON value
	// per place the API reports it.
	usage func(answer any, events []sseEvent) []any
}

func usageCases(t *testing.T) []usageCase {
	data := func(e sseEvent) any { return jsonValue(t, e.data) }
	return []usageCase{
		{"responses", "/v1/responses", nil, body(responsesFirst, "false"), false,
			func(a any, _ []sseEvent) []any { return []any{field(a, "usage")} }},
		{"responses stream", "/v1/responses", nil, body(responsesAfter, "true"), true,
			func(_ any, evs []sseEvent) []any {
				return []any{field(data(evs[len(evs)-1]), "response", "usage")}
			}},
		{"chat", "/v1/chat/completions", nil, body(chatFirst, "false"), false,
			func(a any, _ []sseEvent) []any { return []any{field(a, "usage")} }},
		{"chat stream", "/v1/chat/completions", nil, body(chatAfter, "true"), true,
			func(_ any, evs []sseEvent) []any {
				var us []any
				for _, e := range evs {
					if e.data != "[DONE]" && field(data(e), "usage") != nil {
						us = append(us, field(data(e), "usage"))
					}
				}
				return us
			}},
		{"messages", "/v1/messages", anthropicHeaders, body(messagesFirst, "false"), false,
			func(a any, _ []sseEvent) []any { return []any{field(a, "usage")} }},
		{"messages stream", "/v1/messages", anthropicHeaders, body(messagesAfter, "true"), true,
			func(_ any, evs []sseEvent) []any {
				var us []any
				for _, e := range evs {
					if u := field(data(e), "message", "usage"); u != nil {
						us = append(us, u)
					}
					if u := field(data(e), "usage"); u != nil {
						us = append(us, u)
					}
				}
				return us
			}},
		{"gemini", "/v1beta/models/m:generateContent", geminiHeaders, geminiFirst, false,
			func(a any, _ []sseEvent) []any { return []any{field(a, "usageMetadata")} }},
		{"gemini stream", "/v1beta/models/m:streamGenerateContent?alt=sse", geminiHeaders, geminiAfter, true,
			func(_ any, evs []sseEvent) []any {
				var us []any
				for _, e := range evs {
					if u := field(data(e), "usageMetadata"); u != nil {
						us = append(us, u)
					}
				}
				return us
			}},
	}
}

// answer posts c's request and returns its reported usage.
func (c usageCase) answer(t *testing.T, srv *httptest.Server) []any {
	resp := post(t, srv, c.path, c.header, c.body)
	if c.stream {
		return c.usage(nil, readSSE(t, resp))
	}
	return c.usage(decode[any](t, resp.Body), nil)
}

// Script.Usage is reported exactly, in each API's own fields, and
// recorded with the request.
func TestScriptUsage(t *testing.T) {
	u := Usage{Input: 1000, CachedInput: 400, Output: 30, Reasoning: 10}
	responses := `{"input_tokens":1000,"input_tokens_details":{"cached_tokens":400},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":1030}`
	chat := `{"prompt_tokens":1000,"prompt_tokens_details":{"cached_tokens":400},"completion_tokens":30,"completion_tokens_details":{"reasoning_tokens":10},"total_tokens":1030}`
	messages := `{"input_tokens":600,"cache_read_input_tokens":400,"cache_creation_input_tokens":0,"output_tokens":30}`
	gemini := `{"promptTokenCount":1000,"cachedContentTokenCount":400,"candidatesTokenCount":20,"thoughtsTokenCount":10,"totalTokenCount":1030}`
	want := map[string][]string{
		"responses": {responses}, "responses stream": {responses},
		"chat": {chat}, "chat stream": {chat},
		"messages": {messages},
		// message_start counts the input and one output token so far;
		// message_delta the whole output.
		"messages stream": {`{"input_tokens":600,"cache_read_input_tokens":400,"cache_creation_input_tokens":0,"output_tokens":1}`, `{"output_tokens":30}`},
		"gemini":          {gemini},
		// A running total: the first chunk counts the prompt only.
		"gemini stream": {`{"promptTokenCount":1000,"cachedContentTokenCount":400,"totalTokenCount":1000}`, gemini},
	}
	m, srv := newServer(t, Script{Usage: &u})
	for _, c := range usageCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var wantUsage []any
			for _, s := range want[c.name] {
				wantUsage = append(wantUsage, jsonValue(t, s))
			}
			if d := cmp.Diff(wantUsage, c.answer(t, srv)); d != "" {
				t.Errorf("usage (-want +got):\n%s", d)
			}
			reqs := m.Requests()
			if got := reqs[len(reqs)-1].Usage; got == nil || *got != u {
				t.Errorf("recorded usage %+v, want %+v", got, u)
			}
		})
	}
}

func TestNoUsage(t *testing.T) {
	m, srv := newServer(t, Script{NoUsage: true})
	for _, c := range usageCases(t) {
		t.Run(c.name, func(t *testing.T) {
			for _, u := range c.answer(t, srv) {
				if u != nil {
					t.Errorf("usage %v", u)
				}
			}
			reqs := m.Requests()
			if r := reqs[len(reqs)-1]; r.Usage != nil {
				t.Errorf("recorded usage %+v", r.Usage)
			}
		})
	}
	// A chat stream asked for usage gets none all the same.
	evs := readSSE(t, post(t, srv, "/v1/chat/completions", nil, body(chatFirst, "true")))
	if s := foldChat(t, evs); s.usage != 0 || !s.done || s.name != "shell" {
		t.Errorf("chat stream %+v", s)
	}
}

// Without Script.Usage the numbers are made up, and recorded as sent:
// input from the body's size, output by the answer's kind.
func TestMadeUpUsage(t *testing.T) {
	m, srv := newServer(t, Script{})
	for _, c := range usageCases(t) {
		t.Run(c.name, func(t *testing.T) {
			c.answer(t, srv)
			reqs := m.Requests()
			r := reqs[len(reqs)-1]
			out := int64(finalTokens)
			if !strings.Contains(string(r.Body), "function_call_output") && !strings.Contains(string(r.Body), `"role":"tool"`) &&
				!strings.Contains(string(r.Body), "tool_result") && !strings.Contains(string(r.Body), "functionResponse") {
				out = toolCallTokens
			}
			want := Usage{Input: int64(len(r.Body))/4 + 1, Output: out}
			if r.Usage == nil || *r.Usage != want {
				t.Errorf("recorded usage %+v, want %+v", r.Usage, want)
			}
		})
	}
}
