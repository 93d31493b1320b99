package modelmock

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// geminiRequest is the part of a Gemini API request
// (POST /v1beta/models/{model}:generateContent or :streamGenerateContent)
// the script reads.
type geminiRequest struct {
	Contents []struct {
		Role  string            `json:"role"`
		Parts []json.RawMessage `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
			// ParametersJSONSchema is the plain JSON Schema form the
			// Gemini CLI sends, in place of the OpenAPI-subset
			// "parameters".
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func (q geminiRequest) hasToolOutput() bool {
	for _, c := range q.Contents {
		for _, raw := range c.Parts {
			var p struct {
				FunctionResponse json.RawMessage `json:"functionResponse"`
			}
			if json.Unmarshal(raw, &p) == nil && p.FunctionResponse != nil {
				return true
			}
		}
	}
	return false
}

func (q geminiRequest) shellTool() (shellTool, bool) {
	tools := map[string]json.RawMessage{}
	for _, t := range q.Tools {
		for _, f := range t.FunctionDeclarations {
			schema := f.ParametersJSONSchema
			if schema == nil {
				schema = f.Parameters
			}
			tools[f.Name] = schema
		}
	}
	return findShellTool(tools)
}

// gemini answers a Gemini generateContent request with one candidate
// whose one part is a functionCall of the shell tool, or the final text.
// Streamed, the answer is its chunks: server-sent events with ?alt=sse,
// else one JSON array.
func (m *Mock) gemini(w http.ResponseWriter, r *http.Request, body []byte, i int, stream bool) {
	var q geminiRequest
	if err := json.Unmarshal(body, &q); err != nil {
		apiError(w, r, http.StatusBadRequest, "parse request: "+err.Error())
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	model, _, _ := strings.Cut(path[strings.LastIndex(path, "/")+1:], ":")
	part := map[string]any{"text": m.script.Final}
	out := int64(finalTokens)
	if st, ok := q.shellTool(); ok && !q.hasToolOutput() {
		// The real API gives a call no id; the CLI makes its own.
		part = map[string]any{"functionCall": map[string]any{"name": st.name, "args": st.args(m.script.Command)}}
		out = toolCallTokens
	}
	u := m.usage(i, body, out)
	chunk := func(parts []any, finish string, meta map[string]any) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		c := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": m.id("resp-")}
		if meta != nil {
			c["usageMetadata"] = meta
		}
		return c
	}
	if !stream {
		writeJSON(w, chunk([]any{part}, "STOP", geminiUsage(u, true)))
		return
	}
	// A text answer streams in two chunks, the first with the prompt's
	// count only, as the real API's running totals start; a call comes
	// whole, in the last chunk.
	var chunks []map[string]any
	if text, ok := part["text"].(string); ok {
		if _, n := utf8.DecodeRuneInString(text); n < len(text) {
			chunks = append(chunks, chunk([]any{map[string]any{"text": text[:n]}}, "", geminiUsage(u, false)))
			part = map[string]any{"text": text[n:]}
		}
	}
	chunks = append(chunks, chunk([]any{part}, "STOP", geminiUsage(u, true)))
	if r.URL.Query().Get("alt") != "sse" {
		writeJSON(w, chunks)
		return
	}
	s := newSSE(w)
	for _, c := range chunks {
		s.event("", c)
	}
}

// geminiUsage is u as Gemini's usageMetadata, nil for none; done is
// whether the answer is whole (a running total before that counts the
// prompt only). Zero counts are left out, as the API does.
func geminiUsage(u *Usage, done bool) map[string]any {
	if u == nil {
		return nil
	}
	meta := map[string]any{"promptTokenCount": u.Input, "totalTokenCount": u.Input}
	if u.CachedInput != 0 {
		meta["cachedContentTokenCount"] = u.CachedInput
	}
	if !done {
		return meta
	}
	meta["totalTokenCount"] = u.Input + u.Output
	if n := u.Output - u.Reasoning; n != 0 {
		meta["candidatesTokenCount"] = n
	}
	if u.Reasoning != 0 {
		meta["thoughtsTokenCount"] = u.Reasoning
	}
	return meta
}

// geminiModel is a Gemini API model resource for the name.
func geminiModel(name string) map[string]any {
	return map[string]any{
		"name": "models/" + name, "baseModelId": name, "version": "001", "displayName": "Mock",
		"inputTokenLimit": 1048576, "outputTokenLimit": 65536,
		"supportedGenerationMethods": []string{"generateContent", "countTokens"},
	}
}

// geminiStatus is the google.rpc status name Gemini's errors carry.
func geminiStatus(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	}
	return "INTERNAL"
}
