// Package modelmock is a scripted stand-in for the model APIs that agent
// harnesses call: the OpenAI Responses and Chat Completions APIs, the
// Anthropic Messages API and the Gemini API, each streaming (SSE) or not.
// It lets end-to-end tests run a real harness CLI with no model behind it.
//
// The script is decided from each request alone, never from what came
// before, so retries, parallel sub-requests and side calls (titles,
// summaries) get the same answer they would from a fresh mock: while the
// conversation holds no tool result and the request offers a shell-like
// tool, the answer is a call of that tool running Script.Command; after
// that, and for any request without such a tool, it is the text
// Script.Final.
//
// Token usage. Every answer reports a Usage (Request.Usage records it):
// Script.Usage if set, else made-up numbers (input the body's size over
// four, output a fixed count), or none at all with Script.NoUsage. Input
// counts every input token, cached ones included; Output every output
// token, reasoning included. Each API carries it in its own fields:
//
//   - Responses: usage.input_tokens = Input (cached included),
//     usage.input_tokens_details.cached_tokens = CachedInput,
//     usage.output_tokens = Output (reasoning included),
//     usage.output_tokens_details.reasoning_tokens = Reasoning,
//     usage.total_tokens = Input+Output; streamed, in response.completed.
//   - Chat Completions: usage.prompt_tokens = Input (cached included),
//     usage.prompt_tokens_details.cached_tokens = CachedInput,
//     usage.completion_tokens = Output (reasoning included),
//     usage.completion_tokens_details.reasoning_tokens = Reasoning,
//     usage.total_tokens; streamed, only in a last chunk with no choices,
//     and only if the request asked for it (stream_options.include_usage).
//   - Anthropic Messages: usage.input_tokens = Input-CachedInput (cache
//     reads excluded), usage.cache_read_input_tokens = CachedInput,
//     usage.cache_creation_input_tokens = 0, usage.output_tokens = Output
//     (thinking included; the API has no separate count). Streamed, the
//     input side is in message_start's message.usage (with output_tokens
//     1), and message_delta's usage.output_tokens is the whole Output,
//     a running total that replaces message_start's.
//   - Gemini: usageMetadata.promptTokenCount = Input (cached included),
//     usageMetadata.cachedContentTokenCount = CachedInput,
//     usageMetadata.candidatesTokenCount = Output-Reasoning (thoughts
//     excluded), usageMetadata.thoughtsTokenCount = Reasoning,
//     usageMetadata.totalTokenCount = Input+Output; the zero counts are
//     left out, as the API does. Streamed, every chunk carries
//     usageMetadata as a running total: the last chunk's counts.
//
// The mock records every request it gets, headers included, so a test
// can check what reached "the model" (for example that the egress proxy
// replaced a placeholder key). It must never be served beyond loopback:
// it answers anyone, and records their credentials.
package modelmock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Defaults of a Script's zero fields.
const (
	DefaultCommand = "echo fixed > answer.txt"
	DefaultFinal   = "done"
)

// Script is what the mock answers.
type Script struct {
	// Command is the shell command the first turn asks to run.
	Command string
	// Final is the assistant's text once a tool result is back.
	Final string
	// Usage, if set, is the token usage every answer reports, in each
	// API's own fields (see the package comment).
	Usage *Usage
	// NoUsage: answers carry no usage at all.
	NoUsage bool
}

// Usage is the token usage of one answer. Input includes CachedInput;
// Output includes Reasoning.
type Usage struct {
	Input, CachedInput, Output, Reasoning int64
}

// Request is one request the mock received.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	// Usage is the usage the answer reported, nil for none (Script.NoUsage,
	// an error, a route that reports none).
	Usage *Usage
}

// Mock is an http.Handler serving a Script.
type Mock struct {
	script Script
	seq    atomic.Int64

	mu   sync.Mutex
	reqs []Request
}

// New returns a mock answering with s.
func New(s Script) *Mock {
	if s.Command == "" {
		s.Command = DefaultCommand
	}
	if s.Final == "" {
		s.Final = DefaultFinal
	}
	return &Mock{script: s}
}

// Requests returns a copy of the requests received so far, in order.
func (m *Mock) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// maxBody bounds a recorded request body; harness prompts with their
// tool schemas run to a few hundred KiB.
const maxBody = 16 << 20

// ServeHTTP routes by the path's tail, so any base URL prefix ("/v1",
// "/api/v1", "/v1beta", none) works the way the harness's base URL
// setting makes it.
func (m *Mock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		apiError(w, r, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	m.mu.Lock()
	i := len(m.reqs)
	m.reqs = append(m.reqs, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	m.mu.Unlock()

	path := strings.TrimSuffix(r.URL.Path, "/")
	// Gemini's methods follow the model's name after a colon:
	// /v1beta/models/gemini-2.5-pro:streamGenerateContent.
	_, method, _ := strings.Cut(path[strings.LastIndex(path, "/")+1:], ":")
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		m.responses(w, r, body, i)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		m.chat(w, r, body, i)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": inputTokens(body)})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		m.messages(w, r, body, i)
	case r.Method == http.MethodPost && (method == "generateContent" || method == "streamGenerateContent"):
		m.gemini(w, r, body, i, method == "streamGenerateContent")
	case r.Method == http.MethodPost && method == "countTokens":
		writeJSON(w, map[string]any{"totalTokens": inputTokens(body)})
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		m.models(w, r)
	case r.Method == http.MethodGet && isGemini(r) && strings.Contains(path, "/models/"):
		writeJSON(w, geminiModel(path[strings.LastIndex(path, "/")+1:]))
	default:
		apiError(w, r, http.StatusNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
	}
}

// id returns a fresh identifier with the prefix the real API uses.
func (m *Mock) id(prefix string) string {
	return fmt.Sprintf("%s%024d", prefix, m.seq.Add(1))
}

// Usage numbers are made up but stable: input is the body's size over
// four (a rough tokens-per-byte), output a fixed count per answer kind.
const (
	toolCallTokens = 20
	finalTokens    = 5
)

func inputTokens(body []byte) int64 { return int64(len(body))/4 + 1 }

// usage is the usage of request i's answer (out its made-up output
// count), recorded with the request before the answer is written, so a
// client that has its answer finds it recorded; nil for none.
func (m *Mock) usage(i int, body []byte, out int64) *Usage {
	if m.script.NoUsage {
		return nil
	}
	u := Usage{Input: inputTokens(body), Output: out}
	if m.script.Usage != nil {
		u = *m.script.Usage
	}
	rec := u
	m.mu.Lock()
	m.reqs[i].Usage = &rec
	m.mu.Unlock()
	return &u
}

// isAnthropic tells the Anthropic API's callers from OpenAI's where the
// path is shared (/v1/models): they send anthropic-version.
func isAnthropic(r *http.Request) bool {
	return r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != ""
}

// isGemini tells the Gemini API's callers: their key is in
// x-goog-api-key or ?key=, or their path is the API's (/v1beta/...).
func isGemini(r *http.Request) bool {
	return r.Header.Get("X-Goog-Api-Key") != "" || r.URL.Query().Has("key") ||
		strings.Contains(r.URL.Path, "/v1beta/") || strings.Contains(r.URL.Path, ":")
}

// models lists one model, "mock", in the caller's API shape. Harnesses
// name any model they like; the mock answers to every name.
func (m *Mock) models(w http.ResponseWriter, r *http.Request) {
	if isGemini(r) {
		writeJSON(w, map[string]any{"models": []any{geminiModel("mock")}})
		return
	}
	if isAnthropic(r) {
		writeJSON(w, map[string]any{
			"data": []any{map[string]any{
				"type": "model", "id": "mock", "display_name": "Mock", "created_at": "2025-01-01T00:00:00Z",
			}},
			"has_more": false, "first_id": "mock", "last_id": "mock",
		})
		return
	}
	writeJSON(w, map[string]any{
		"object": "list",
		"data":   []any{map[string]any{"id": "mock", "object": "model", "created": 1735689600, "owned_by": "modelmock"}},
	})
}

// apiError answers in the error shape of the API the caller speaks.
func apiError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var v any
	switch {
	case isGemini(r):
		v = map[string]any{"error": map[string]any{"code": status, "message": msg, "status": geminiStatus(status)}}
	case isAnthropic(r):
		v = map[string]any{"type": "error", "error": map[string]any{"type": errorType(status), "message": msg}}
	default:
		v = map[string]any{"error": map[string]any{"message": msg, "type": errorType(status), "param": nil, "code": nil}}
	}
	json.NewEncoder(w).Encode(v)
}

func errorType(status int) string {
	if status == http.StatusNotFound {
		return "not_found_error"
	}
	return "invalid_request_error"
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events, flushing each so a client sees them as
// a real stream.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event; name "" omits the event: line (Chat
// Completions sends data only).
func (s *sse) event(name string, data any) {
	var b bytes.Buffer
	if name != "" {
		fmt.Fprintf(&b, "event: %s\n", name)
	}
	switch d := data.(type) {
	case string:
		fmt.Fprintf(&b, "data: %s\n\n", d)
	default:
		j, _ := json.Marshal(d)
		fmt.Fprintf(&b, "data: %s\n\n", j)
	}
	s.w.Write(b.Bytes())
	if s.f != nil {
		s.f.Flush()
	}
}

// shellTool is how a request's offered tool runs a command.
type shellTool struct {
	name string
	// args builds the tool's JSON arguments for a command.
	args func(cmd string) any
	// local is the Responses API's built-in local_shell tool, answered
	// with a local_shell_call item rather than a function call.
	local bool
	// code is codex's code mode: a custom tool running JavaScript that
	// reaches the shell through its nested tools.
	code bool
}

// shellToolNames are tool names that run a shell command, most
// preferred first: what Codex and Claude Code offer, what OpenCode and Pi
// (bash), Qwen Code and Gemini CLI (run_shell_command) and Cline 3
// (run_commands, a list of command lines) offer, and common others.
var shellToolNames = []string{"shell", "shell_command", "exec_command", "local_shell", "Bash", "bash",
	"run_shell_command", "execute_command", "run_commands", "container.exec"}

// findShellTool picks a shell-like tool from name → JSON Schema of its
// parameters, and reads the schema for the argument format.
func findShellTool(tools map[string]json.RawMessage) (shellTool, bool) {
	for _, name := range shellToolNames {
		schema, ok := tools[name]
		if !ok {
			continue
		}
		return shellTool{name: name, args: argsFor(schema)}, true
	}
	return shellTool{}, false
}

// argsFor reads a tool's parameter schema: a "command" (or "cmd") that is
// an array takes an argv, run through bash -lc; a string takes the line.
func argsFor(schema json.RawMessage) func(string) any {
	var s struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	json.Unmarshal(schema, &s)
	if s.Properties["commands"].Type == "array" { // Cline's run_commands: a list of command lines
		return func(cmd string) any { return map[string]any{"commands": []string{cmd}} }
	}
	key := "command"
	if _, ok := s.Properties[key]; !ok {
		if _, ok := s.Properties["cmd"]; ok {
			key = "cmd"
		}
	}
	if s.Properties[key].Type == "array" {
		return func(cmd string) any { return map[string]any{key: []string{"bash", "-lc", cmd}} }
	}
	return func(cmd string) any { return map[string]any{key: cmd} }
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
