package client

import "time"

// Model calls are counted at a sandbox's egress proxy, from each model
// API's own answer, on the hosts a secret is bound to (the only TLS the
// proxy terminates). A token count the proxy could not read is nil, never
// 0: "unknown" is not "free".

// Budget caps what a sandbox's (or a task's) model calls may spend.
// MaxTokens counts input, cached input and output tokens together;
// MaxCostUSD is model calls and compute together, as the server's price
// table prices them (a server without one refuses it). Once it is spent
// the proxy answers further model calls 429 with X-Airlock-Egress: budget;
// nothing else is stopped. Set at least one field, each above 0.
type Budget struct {
	MaxCostUSD *float64 `json:"max_cost_usd,omitempty"`
	MaxTokens  *int64   `json:"max_tokens,omitempty"`
}

// TokenBudget is a budget of n tokens.
func TokenBudget(n int64) *Budget { return &Budget{MaxTokens: &n} }

// CostBudget is a budget of usd dollars.
func CostBudget(usd float64) *Budget { return &Budget{MaxCostUSD: &usd} }

// Cost is USD as the server's price table prices it: Total is Model (the
// model calls' tokens) plus Compute (CPU seconds, memory GiB-seconds of
// the memory limit, GiB sent out).
type Cost struct {
	Total   float64 `json:"total"`
	Model   float64 `json:"model"`
	Compute float64 `json:"compute"`
}

// ModelTotals is what model calls used. InputTokens excludes the cached
// input (CachedInputTokens); OutputTokens includes the reasoning
// (ReasoningTokens). UnmeteredCalls were answered but their usage could
// not be read: their tokens are in no total.
type ModelTotals struct {
	Calls             int64 `json:"calls"`
	UnmeteredCalls    int64 `json:"unmetered_calls"`
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	ReasoningTokens   int64 `json:"reasoning_tokens"`
}

// Tokens is every token counted: input, cached input and output (what a
// token budget counts).
func (m ModelTotals) Tokens() int64 { return m.InputTokens + m.CachedInputTokens + m.OutputTokens }

// Model APIs the egress proxy reads usage from.
const (
	APIOpenAIResponses   = "openai.responses"
	APIOpenAIChat        = "openai.chat"
	APIAnthropicMessages = "anthropic.messages"
	APIGemini            = "gemini"
)

// ModelCall is one model API call as the egress proxy counted it (the Call
// of a task's usage event of source "proxy"). CostUSD is nil when the
// usage could not be read, the price table does not name the model, or
// the server has none. Refused says the call never left: the budget was
// spent.
type ModelCall struct {
	Time              time.Time `json:"time"`
	API               string    `json:"api,omitempty"`
	Model             string    `json:"model,omitempty"`
	Host              string    `json:"host"`
	Status            int       `json:"status,omitempty"`
	Streamed          bool      `json:"streamed,omitempty"`
	DurationMS        float64   `json:"duration_ms"`
	InputTokens       *int64    `json:"input_tokens"`
	CachedInputTokens *int64    `json:"cached_input_tokens"`
	OutputTokens      *int64    `json:"output_tokens"`
	ReasoningTokens   *int64    `json:"reasoning_tokens"`
	CostUSD           *float64  `json:"cost_usd"`
	Refused           string    `json:"refused,omitempty"`
}

// ModelUsage is one answer's usage in a network log event of kind
// NetModelUsage.
type ModelUsage struct {
	API               string `json:"api"`
	Model             string `json:"model,omitempty"`
	Streamed          bool   `json:"streamed"`
	InputTokens       *int64 `json:"input_tokens"`
	CachedInputTokens *int64 `json:"cached_input_tokens"`
	OutputTokens      *int64 `json:"output_tokens"`
	ReasoningTokens   *int64 `json:"reasoning_tokens"`
}

// Kinds of network log events besides connections and requests.
const (
	NetSecretInjected    = "secret.injected"
	NetSecretMisdirected = "secret.misdirected"
	// NetModelUsage is a model API call's answer, its tokens in Usage
	// (its bytes are in the request's own event).
	NetModelUsage = "model_usage"
	// NetModelBudget is a model API call refused with 429: the budget is
	// spent.
	NetModelBudget = "model_budget"
)
