package modelmock

import (
	"encoding/json"
	"net/http"
)

// messagesRequest is the part of an Anthropic Messages API request
// (POST /v1/messages) the script reads.
type messagesRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"` // a string, or blocks
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
}

func (q messagesRequest) hasToolOutput() bool {
	for _, msg := range q.Messages {
		var blocks []struct {
			Type string `json:"type"`
		}
		if msg.Role != "user" || json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				return true
			}
		}
	}
	return false
}

func (q messagesRequest) shellTool() (shellTool, bool) {
	tools := map[string]json.RawMessage{}
	for _, t := range q.Tools {
		tools[t.Name] = t.InputSchema
	}
	return findShellTool(tools)
}

// messages answers a Messages API request with one content block: a
// tool_use of the shell tool, or the final text.
func (m *Mock) messages(w http.ResponseWriter, r *http.Request, body []byte, i int) {
	var q messagesRequest
	if err := json.Unmarshal(body, &q); err != nil {
		apiError(w, r, http.StatusBadRequest, "parse request: "+err.Error())
		return
	}
	block := map[string]any{"type": "text", "text": m.script.Final}
	stop, out := "end_turn", int64(finalTokens)
	if st, ok := q.shellTool(); ok && !q.hasToolOutput() {
		block = map[string]any{"type": "tool_use", "id": m.id("toolu_"), "name": st.name, "input": st.args(m.script.Command)}
		stop, out = "tool_use", toolCallTokens
	}
	u := m.usage(i, body, out)
	msg := map[string]any{
		"id": m.id("msg_"), "type": "message", "role": "assistant", "model": q.Model,
		"content": []any{block}, "stop_reason": stop, "stop_sequence": nil,
	}
	if u != nil {
		msg["usage"] = messagesUsage(*u, u.Output)
	}
	if !q.Stream {
		writeJSON(w, msg)
		return
	}

	// The stream: message_start (no content yet), the block's start,
	// deltas and stop, message_delta with the stop reason and output
	// usage, message_stop.
	s := newSSE(w)
	send := func(typ string, fields map[string]any) {
		fields["type"] = typ
		s.event(typ, fields)
	}
	start := with(msg, "content", []any{})
	start["stop_reason"] = nil
	if u != nil {
		// The real API's message_start counts one output token so far.
		start["usage"] = messagesUsage(*u, 1)
	}
	send("message_start", map[string]any{"message": start})
	send("ping", map[string]any{})
	if block["type"] == "tool_use" {
		send("content_block_start", map[string]any{"index": 0, "content_block": with(block, "input", map[string]any{})})
		send("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": mustJSON(block["input"])}})
	} else {
		send("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": block["text"]}})
	}
	send("content_block_stop", map[string]any{"index": 0})
	delta := map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}}
	if u != nil {
		delta["usage"] = map[string]any{"output_tokens": u.Output}
	}
	send("message_delta", delta)
	send("message_stop", map[string]any{})
}

// messagesUsage is u in the Messages API's fields, its output count out:
// input_tokens leaves out the cache reads.
func messagesUsage(u Usage, out int64) map[string]any {
	return map[string]any{
		"input_tokens": u.Input - u.CachedInput, "output_tokens": out,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": u.CachedInput,
	}
}
