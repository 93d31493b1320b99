package modelmock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// responsesRequest is the part of an OpenAI Responses API request
// (POST /v1/responses) the script reads.
type responsesRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Input  json.RawMessage   `json:"input"` // a string, or a list of items
	Tools  []json.RawMessage `json:"tools"`
}

// hasToolOutput tells whether the input holds a tool's output item
// (function_call_output, custom_tool_call_output, ...).
func (q responsesRequest) hasToolOutput() bool {
	var items []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(q.Input, &items) != nil {
		return false // a plain string prompt
	}
	for _, it := range items {
		if strings.HasSuffix(it.Type, "_call_output") {
			return true
		}
	}
	return false
}

// shellTool finds a shell-like tool among the request's tools and the
// tools an input item adds (codex sends some in an "additional_tools"
// item), looking into namespaces: a function tool, else the built-in
// local_shell, else a code-mode "exec" tool, a JavaScript runner whose
// nested tools include exec_command.
func (q responsesRequest) shellTool() (shellTool, bool) {
	c := toolCollector{functions: map[string]json.RawMessage{}}
	c.add(q.Tools)
	var items []struct {
		Type  string            `json:"type"`
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(q.Input, &items) == nil {
		for _, it := range items {
			if it.Type == "additional_tools" {
				c.add(it.Tools)
			}
		}
	}
	if st, ok := findShellTool(c.functions); ok {
		return st, true
	}
	if c.localShell {
		return shellTool{name: "local_shell", local: true}, true
	}
	if c.codeExec {
		return shellTool{name: "exec", code: true}, true
	}
	return shellTool{}, false
}

// toolCollector gathers Responses API tool definitions.
type toolCollector struct {
	functions  map[string]json.RawMessage // name → parameters schema
	localShell bool
	codeExec   bool
}

func (c *toolCollector) add(tools []json.RawMessage) {
	for _, raw := range tools {
		var t struct {
			Type        string            `json:"type"`
			Name        string            `json:"name"`
			Description string            `json:"description"`
			Parameters  json.RawMessage   `json:"parameters"`
			Tools       []json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(raw, &t) != nil {
			continue
		}
		switch t.Type {
		case "function":
			c.functions[t.Name] = t.Parameters
		case "local_shell":
			c.localShell = true
		case "custom":
			if t.Name == "exec" && strings.Contains(t.Description, "tools.exec_command") {
				c.codeExec = true
			}
		case "namespace":
			c.add(t.Tools)
		}
	}
}

// responses answers a Responses API request with one output item: a
// shell tool call or the final message.
func (m *Mock) responses(w http.ResponseWriter, r *http.Request, body []byte, i int) {
	var q responsesRequest
	if err := json.Unmarshal(body, &q); err != nil {
		apiError(w, r, http.StatusBadRequest, "parse request: "+err.Error())
		return
	}
	var item map[string]any
	out := int64(finalTokens)
	if st, ok := q.shellTool(); ok && !q.hasToolOutput() {
		item, out = m.responsesToolCall(st), toolCallTokens
	} else {
		item = map[string]any{
			"type": "message", "id": m.id("msg_"), "role": "assistant", "status": "completed",
			"content": []any{outputText(m.script.Final)},
		}
	}
	resp := map[string]any{
		"id": m.id("resp_"), "object": "response", "created_at": time.Now().Unix(),
		"status": "completed", "model": q.Model, "output": []any{item},
	}
	if u := m.usage(i, body, out); u != nil {
		resp["usage"] = map[string]any{
			"input_tokens": u.Input, "input_tokens_details": map[string]any{"cached_tokens": u.CachedInput},
			"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
			"total_tokens": u.Input + u.Output,
		}
	}
	if !q.Stream {
		writeJSON(w, resp)
		return
	}
	streamResponse(newSSE(w), resp, item)
}

func (m *Mock) responsesToolCall(st shellTool) map[string]any {
	switch {
	case st.local:
		return map[string]any{
			"type": "local_shell_call", "id": m.id("lsh_"), "call_id": m.id("call_"), "status": "completed",
			"action": map[string]any{"type": "exec", "command": []string{"bash", "-lc", m.script.Command}, "env": map[string]string{}},
		}
	case st.code:
		// A custom tool takes free text: here JavaScript calling the
		// nested exec_command tool and reporting what it returned.
		js := fmt.Sprintf("const r = await tools.exec_command({cmd: %s});\ntext(r);\n", mustJSON(m.script.Command))
		return map[string]any{
			"type": "custom_tool_call", "id": m.id("ctc_"), "call_id": m.id("call_"), "status": "completed",
			"name": st.name, "input": js,
		}
	}
	return map[string]any{
		"type": "function_call", "id": m.id("fc_"), "call_id": m.id("call_"), "status": "completed",
		"name": st.name, "arguments": mustJSON(st.args(m.script.Command)),
	}
}

func outputText(s string) map[string]any {
	return map[string]any{"type": "output_text", "text": s, "annotations": []any{}}
}

// streamResponse sends resp as the Responses API's typed event stream:
// created, in_progress, the item added, its deltas and done, completed.
func streamResponse(s *sse, resp, item map[string]any) {
	seq := 0
	send := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		s.event(typ, fields)
	}
	pending := map[string]any{}
	for k, v := range resp {
		pending[k] = v
	}
	pending["status"], pending["output"], pending["usage"] = "in_progress", []any{}, nil
	send("response.created", map[string]any{"response": pending})
	send("response.in_progress", map[string]any{"response": pending})

	started := map[string]any{}
	for k, v := range item {
		started[k] = v
	}
	started["status"] = "in_progress"
	id := item["id"]
	switch item["type"] {
	case "message":
		started["content"] = []any{}
		send("response.output_item.added", map[string]any{"output_index": 0, "item": started})
		text := item["content"].([]any)[0].(map[string]any)["text"].(string)
		part := map[string]any{"item_id": id, "output_index": 0, "content_index": 0}
		send("response.content_part.added", with(part, "part", outputText("")))
		send("response.output_text.delta", with(part, "delta", text))
		send("response.output_text.done", with(part, "text", text))
		send("response.content_part.done", with(part, "part", outputText(text)))
	case "function_call":
		started["arguments"] = ""
		send("response.output_item.added", map[string]any{"output_index": 0, "item": started})
		args := item["arguments"]
		send("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": 0, "delta": args})
		send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": 0, "arguments": args})
	case "custom_tool_call":
		started["input"] = ""
		send("response.output_item.added", map[string]any{"output_index": 0, "item": started})
		send("response.custom_tool_call_input.delta", map[string]any{"item_id": id, "output_index": 0, "delta": item["input"]})
		send("response.custom_tool_call_input.done", map[string]any{"item_id": id, "output_index": 0, "input": item["input"]})
	default:
		send("response.output_item.added", map[string]any{"output_index": 0, "item": started})
	}
	send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	send("response.completed", map[string]any{"response": resp})
}

// with returns a copy of m with k set to v.
func with(m map[string]any, k string, v any) map[string]any {
	c := make(map[string]any, len(m)+1)
	for mk, mv := range m {
		c[mk] = mv
	}
	c[k] = v
	return c
}
