package egress

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// KindModelUsage is the event of one model API call's answer through an
// intercepted tunnel, with the tokens it reports in Usage. Status is the
// answer's; DurationMS runs from the request to where the usage was read
// (the event that closes the stream, or the body's end); bytes are
// counted in the request's own event.
const KindModelUsage = "model_usage"

// Model APIs the proxy reads usage from.
const (
	APIOpenAIResponses   = "openai.responses"
	APIOpenAIChat        = "openai.chat"
	APIAnthropicMessages = "anthropic.messages"
	APIGemini            = "gemini"
)

// ModelUsage is what a model API's answer says it cost. A token field is
// nil when the answer could not be read (no usage in it, an error status,
// a cut stream, a body past the bound, an encoding the proxy cannot
// read), never 0: a budget must tell "unknown" from "free".
//
// The fields never count a token twice: InputTokens excludes the cached
// input, ReasoningTokens is part of OutputTokens. A cache count the answer
// leaves out is 0; a reasoning count it leaves out is nil (Anthropic never
// reports one).
type ModelUsage struct {
	API               string `json:"api"`             // APIOpenAIResponses, ...
	Model             string `json:"model,omitempty"` // the model the answer names (else the request's)
	Streamed          bool   `json:"streamed"`
	InputTokens       *int64 `json:"input_tokens"` // input NOT read from cache (cache writes count here)
	CachedInputTokens *int64 `json:"cached_input_tokens"`
	OutputTokens      *int64 `json:"output_tokens"`    // all output, reasoning included
	ReasoningTokens   *int64 `json:"reasoning_tokens"` // of which reasoning
}

// modelCallOf recognizes a model API call by its method and path, and
// returns its API and, for Gemini, the model the path names; api is ""
// for anything else (listing models, counting tokens, health checks),
// which neither the budget gate nor the usage log concern.
func modelCallOf(req *http.Request) (api, pathModel string) {
	if req.Method != http.MethodPost {
		return "", ""
	}
	p := strings.TrimSuffix(req.URL.Path, "/")
	switch {
	case strings.HasSuffix(p, "/responses"):
		return APIOpenAIResponses, ""
	case strings.HasSuffix(p, "/chat/completions"):
		return APIOpenAIChat, ""
	case strings.HasSuffix(p, "/messages") && !strings.Contains(p, "/threads/"):
		// OpenAI's Assistants post messages to /threads/{id}/messages:
		// no model runs there.
		return APIAnthropicMessages, ""
	}
	i := strings.LastIndex(p, "/models/")
	if i < 0 {
		return "", ""
	}
	model, method, ok := strings.Cut(p[i+len("/models/"):], ":")
	if !ok || model == "" || strings.Contains(model, "/") {
		return "", ""
	}
	if method == "generateContent" || method == "streamGenerateContent" {
		return APIGemini, model
	}
	return "", ""
}

// maxModelName bounds a model name in an event: it comes from the
// sandbox or the upstream, and the log is no place for a megabyte.
const maxModelName = 256

func shortModel(s string) string {
	if len(s) > maxModelName {
		return s[:maxModelName]
	}
	return s
}

// reqPrefixCap is how much of a request body is kept to find its
// "model": request bodies stream upstream and may be large, but clients
// write the model near the start.
const reqPrefixCap = 64 << 10

// prefixTee passes a request body through, keeping its first bytes.
type prefixTee struct {
	io.ReadCloser
	buf []byte
}

func (t *prefixTee) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if room := reqPrefixCap - len(t.buf); room > 0 {
		t.buf = append(t.buf, p[:min(n, room)]...)
	}
	return n, err
}

// requestModel returns the top-level "model" of a JSON object that may
// be cut short, or "".
func requestModel(prefix []byte) string {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		if key == "model" {
			var m string
			if dec.Decode(&m) != nil {
				return ""
			}
			return m
		}
		if skipValue(dec) != nil {
			return ""
		}
	}
	return ""
}

// skipValue skips one value token by token, so a long message list is
// not held in memory twice.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// wireUsage is a usage object of OpenAI (both APIs) or Anthropic; the
// API says which fields mean what.
type wireUsage struct {
	InputTokens   *int64         `json:"input_tokens"`
	OutputTokens  *int64         `json:"output_tokens"`
	InputDetails  *inputDetails  `json:"input_tokens_details"`
	OutputDetails *outputDetails `json:"output_tokens_details"`

	PromptTokens      *int64         `json:"prompt_tokens"`
	CompletionTokens  *int64         `json:"completion_tokens"`
	PromptDetails     *inputDetails  `json:"prompt_tokens_details"`
	CompletionDetails *outputDetails `json:"completion_tokens_details"`

	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
}

// The detail objects of OpenAI's two usage shapes.
type (
	inputDetails struct {
		CachedTokens *int64 `json:"cached_tokens"`
	}
	outputDetails struct {
		ReasoningTokens *int64 `json:"reasoning_tokens"`
	}
)

// geminiUsage is Gemini's usageMetadata. Its JSON leaves out zero counts.
type geminiUsage struct {
	Prompt     int64 `json:"promptTokenCount"`
	Candidates int64 `json:"candidatesTokenCount"`
	Cached     int64 `json:"cachedContentTokenCount"`
	Thoughts   int64 `json:"thoughtsTokenCount"`
	ToolPrompt int64 `json:"toolUsePromptTokenCount"`
}

// wireMsg is any of the four APIs' answers, or one of their stream
// events, with only what usage needs.
type wireMsg struct {
	Type          string       `json:"type"`
	Model         string       `json:"model"`
	Usage         *wireUsage   `json:"usage"`
	Response      *wireMsg     `json:"response"` // OpenAI Responses stream events
	Message       *wireMsg     `json:"message"`  // Anthropic message_start
	Choices       []struct{}   `json:"choices"`  // Chat chunks: only how many
	UsageMetadata *geminiUsage `json:"usageMetadata"`
	ModelVersion  string       `json:"modelVersion"`
}

// tokens is the token half of a ModelUsage.
type tokens struct{ input, cached, output, reasoning *int64 }

func ptr(n int64) *int64 { return &n }

// counted reads a count that includes a detail the answer may omit: the
// rest, and the detail (0 when omitted).
func counted(total, detail *int64) (rest, part *int64) {
	if total == nil {
		return nil, detail
	}
	d := int64(0)
	if detail != nil {
		d = *detail
	}
	return ptr(max(0, *total-d)), ptr(d)
}

// openAIResponses: input_tokens includes the cached ones, output_tokens
// the reasoning ones.
func (w *wireUsage) openAIResponses() tokens {
	return openAITokens(w.InputTokens, w.InputDetails, w.OutputTokens, w.OutputDetails)
}

// openAIChat: prompt_tokens includes the cached ones, completion_tokens
// the reasoning ones.
func (w *wireUsage) openAIChat() tokens {
	return openAITokens(w.PromptTokens, w.PromptDetails, w.CompletionTokens, w.CompletionDetails)
}

// openAITokens reads OpenAI's usage, whichever field names carry it.
func openAITokens(input *int64, in *inputDetails, output *int64, out *outputDetails) tokens {
	var cached, reasoning *int64
	if in != nil {
		cached = in.CachedTokens
	}
	if out != nil {
		reasoning = out.ReasoningTokens
	}
	var t tokens
	t.input, t.cached = counted(input, cached)
	t.output, t.reasoning = output, reasoning
	return t
}

// anthropic: input_tokens excludes both cache reads and cache writes;
// writes are billed as input, so they count there.
func (w *wireUsage) anthropic() tokens {
	var t tokens
	if w.InputTokens != nil {
		t.input = ptr(*w.InputTokens + deref(w.CacheCreation))
		t.cached = ptr(deref(w.CacheRead))
	}
	t.output = w.OutputTokens
	return t
}

// mergeLatest takes each count of n that is set and non-zero: Anthropic
// streams send input in message_start and the cumulative output in
// message_delta, and some providers repeat (or first give) input there.
func (w *wireUsage) mergeLatest(n *wireUsage) {
	for _, f := range []struct {
		dst **int64
		src *int64
	}{
		{&w.InputTokens, n.InputTokens}, {&w.OutputTokens, n.OutputTokens},
		{&w.CacheCreation, n.CacheCreation}, {&w.CacheRead, n.CacheRead},
	} {
		if f.src != nil && (*f.src != 0 || *f.dst == nil) {
			*f.dst = f.src
		}
	}
}

// gemini: promptTokenCount includes the cached tokens;
// candidatesTokenCount excludes the thoughts, and tool-use prompts are
// counted apart from the prompt.
func (g *geminiUsage) tokens() tokens {
	return tokens{
		input:     ptr(max(0, g.Prompt-g.Cached) + g.ToolPrompt),
		cached:    ptr(g.Cached),
		output:    ptr(g.Candidates + g.Thoughts),
		reasoning: ptr(g.Thoughts),
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
