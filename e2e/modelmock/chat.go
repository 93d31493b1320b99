package modelmock

import (
	"encoding/json"
	"net/http"
	"time"
)

// chatRequest is the part of an OpenAI Chat Completions request
// (POST /v1/chat/completions) the script reads.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (q chatRequest) hasToolOutput() bool {
	for _, msg := range q.Messages {
		if msg.Role == "tool" || msg.Role == "function" {
			return true
		}
	}
	return false
}

func (q chatRequest) shellTool() (shellTool, bool) {
	tools := map[string]json.RawMessage{}
	for _, t := range q.Tools {
		if t.Type == "function" {
			tools[t.Function.Name] = t.Function.Parameters
		}
	}
	return findShellTool(tools)
}

// chat answers a Chat Completions request with one choice: an assistant
// message carrying a shell tool call, or the final text.
func (m *Mock) chat(w http.ResponseWriter, r *http.Request, body []byte, i int) {
	var q chatRequest
	if err := json.Unmarshal(body, &q); err != nil {
		apiError(w, r, http.StatusBadRequest, "parse request: "+err.Error())
		return
	}
	var call map[string]any
	finish, out := "stop", int64(finalTokens)
	if st, ok := q.shellTool(); ok && !q.hasToolOutput() {
		call = map[string]any{
			"id": m.id("call_"), "type": "function",
			"function": map[string]any{"name": st.name, "arguments": mustJSON(st.args(m.script.Command))},
		}
		finish, out = "tool_calls", toolCallTokens
	}
	usage := chatUsage(m.usage(i, body, out))
	base := map[string]any{"id": m.id("chatcmpl-"), "created": time.Now().Unix(), "model": q.Model}

	if !q.Stream {
		msg := map[string]any{"role": "assistant", "content": m.script.Final}
		if call != nil {
			msg["content"], msg["tool_calls"] = nil, []any{call}
		}
		resp := with(base, "object", "chat.completion")
		resp["choices"] = []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}
		if usage != nil {
			resp["usage"] = usage
		}
		writeJSON(w, resp)
		return
	}

	s := newSSE(w)
	chunk := func(delta map[string]any, finish any) map[string]any {
		c := with(base, "object", "chat.completion.chunk")
		c["choices"] = []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
		return c
	}
	if call != nil {
		// The first delta names the call; arguments may follow in pieces.
		fn := call["function"].(map[string]any)
		s.event("", chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": call["id"], "type": "function",
			"function": map[string]any{"name": fn["name"], "arguments": ""},
		}}}, nil))
		s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "function": map[string]any{"arguments": fn["arguments"]},
		}}}, nil))
	} else {
		s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
		s.event("", chunk(map[string]any{"content": m.script.Final}, nil))
	}
	s.event("", chunk(map[string]any{}, finish))
	if usage != nil && q.StreamOptions != nil && q.StreamOptions.IncludeUsage {
		u := with(base, "object", "chat.completion.chunk")
		u["choices"], u["usage"] = []any{}, usage
		s.event("", u)
	}
	s.event("", "[DONE]")
}

// chatUsage is u in Chat Completions' fields, nil for none.
func chatUsage(u *Usage) map[string]any {
	if u == nil {
		return nil
	}
	return map[string]any{
		"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedInput},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
	}
}
