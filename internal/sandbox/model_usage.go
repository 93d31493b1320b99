package sandbox

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/pricing"
	"github.com/airlockhq/airlock/internal/store"
)

// Model calls are counted where they are spent: the egress proxy reads
// each answer of a bound model host (the secret path) and logs its usage;
// here that usage is priced, added to the sandbox's meter, recorded in its
// audit log and handed to the task layer, and the sandbox's budget is
// checked before each next call.

// Budget caps what a sandbox may spend: its model calls' tokens (input,
// cached input and output together) or its cost in USD, model calls and
// compute together, as the operator's price table prices them. Only model
// calls are refused once it is spent; the sandbox goes on.
type Budget struct {
	MaxCostUSD *float64 `json:"max_cost_usd,omitempty"`
	MaxTokens  *int64   `json:"max_tokens,omitempty"`
}

// Validate refuses a budget that could never be spent or names nothing.
func (b *Budget) Validate() error {
	switch {
	case b == nil:
		return nil
	case b.MaxCostUSD == nil && b.MaxTokens == nil:
		return errors.New("budget: set max_cost_usd, max_tokens or both")
	case b.MaxCostUSD != nil && (!(*b.MaxCostUSD > 0) || math.IsInf(*b.MaxCostUSD, 0)):
		return fmt.Errorf("budget.max_cost_usd %v must be a number above 0", *b.MaxCostUSD)
	case b.MaxTokens != nil && *b.MaxTokens <= 0:
		return fmt.Errorf("budget.max_tokens %d must be above 0", *b.MaxTokens)
	}
	return nil
}

// ModelCall is one model call through a sandbox's egress proxy, as the
// task layer and the audit log see it. Token counts are nil when the
// answer's usage could not be read (never 0 for "unknown"); CostUSD is
// nil then too, and when the price table does not name the model.
// Refused says the call never left: the budget was spent.
type ModelCall struct {
	SandboxID         string    `json:"sandbox_id,omitempty"`
	TenantID          string    `json:"tenant_id,omitempty"`
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

// Metered says whether the call's usage was read.
func (m ModelCall) Metered() bool { return m.InputTokens != nil || m.OutputTokens != nil }

// Cost is what a sandbox, a task or a tenant cost, as the operator's
// price table prices it.
type Cost struct {
	Total   float64 `json:"total"`
	Model   float64 `json:"model"`
	Compute float64 `json:"compute"`
}

// NewCost sums model and compute.
func NewCost(model, compute float64) Cost {
	return Cost{Total: model + compute, Model: model, Compute: compute}
}

// Add adds o to c.
func (c *Cost) Add(o Cost) {
	c.Total += o.Total
	c.Model += o.Model
	c.Compute += o.Compute
}

// ModelTotals is what a sandbox's (or a tenant's) model calls used.
type ModelTotals struct {
	Calls             int64 `json:"calls"`
	UnmeteredCalls    int64 `json:"unmetered_calls"`
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	ReasoningTokens   int64 `json:"reasoning_tokens"`
}

func modelTotals(u store.ModelUsage) ModelTotals {
	return ModelTotals{Calls: u.Calls, UnmeteredCalls: u.Unmetered, InputTokens: u.InputTokens,
		CachedInputTokens: u.CachedInputTokens, OutputTokens: u.OutputTokens, ReasoningTokens: u.ReasoningTokens}
}

// Prices is the operator's price table (nil: none).
func (s *Service) Prices() *pricing.Table { return s.opts.Prices }

// resources is what compute prices apply to in u, over wall seconds.
func resources(u store.SandboxUsage, wall float64) pricing.Resources {
	return pricing.Resources{CPUSeconds: u.CPUSeconds, MemoryGiBSeconds: float64(u.MemoryMB) / 1024 * wall,
		EgressBytes: u.EgressBytesOut}
}

// cost prices u over wall seconds; nil without a price table.
func (s *Service) cost(u store.SandboxUsage, wall float64) *Cost {
	if s.opts.Prices == nil {
		return nil
	}
	c := NewCost(u.Model.CostUSD, s.opts.Prices.ComputeCost(resources(u, wall)))
	return &c
}

// meterModel counts one model call of the egress proxy: priced, added to
// the sandbox's meter, recorded, and handed on. It runs before the proxy
// passes the answer's end on, so the next call's budget check sees it.
func (s *Service) meterModel(e egress.Event) {
	call := ModelCall{SandboxID: e.SandboxID, TenantID: e.TenantID, Time: e.Time, Host: e.Host,
		Status: e.Status, DurationMS: e.DurationMS}
	if e.Kind == egress.KindModelBudget {
		call.Refused = e.Reason
	}
	if u := e.Usage; u != nil {
		call.API, call.Model, call.Streamed = u.API, u.Model, u.Streamed
		call.InputTokens, call.CachedInputTokens = u.InputTokens, u.CachedInputTokens
		call.OutputTokens, call.ReasoningTokens = u.OutputTokens, u.ReasoningTokens
	}
	if e.Kind == egress.KindModelUsage {
		add := store.ModelUsage{Calls: 1}
		if call.Metered() {
			add.InputTokens, add.CachedInputTokens = deref(call.InputTokens), deref(call.CachedInputTokens)
			add.OutputTokens, add.ReasoningTokens = deref(call.OutputTokens), deref(call.ReasoningTokens)
			if usd, ok := s.opts.Prices.Model(call.Model, pricing.Tokens{Input: add.InputTokens,
				CachedInput: add.CachedInputTokens, Output: add.OutputTokens}); ok {
				call.CostUSD, add.CostUSD = &usd, usd
			}
		} else {
			add.Unmetered = 1
		}
		s.meter.mu.Lock()
		if r := s.meter.runs[e.SandboxID]; r != nil {
			r.u.Model.Add(add)
		}
		s.meter.mu.Unlock()
		s.opts.Metrics.ModelTokens(add.InputTokens, add.CachedInputTokens, add.OutputTokens)
	}
	typ := audit.ModelUsage
	if call.Refused != "" {
		typ = audit.ModelRefused
	}
	s.auditor(Caller{}, e.SandboxID, e.TenantID).record(typ, auditCall(call))
	if s.opts.OnModelCall != nil {
		s.opts.OnModelCall(call)
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// auditCall is a model call as its audit event carries it.
func auditCall(c ModelCall) map[string]any {
	d := map[string]any{"host": c.Host, "status": c.Status, "duration_ms": c.DurationMS,
		"input_tokens": c.InputTokens, "cached_input_tokens": c.CachedInputTokens,
		"output_tokens": c.OutputTokens, "reasoning_tokens": c.ReasoningTokens, "cost_usd": c.CostUSD}
	if c.API != "" {
		d["api"], d["model"], d["streamed"] = c.API, c.Model, c.Streamed
	}
	if c.Refused != "" {
		d["refused"] = c.Refused
	}
	return d
}

// modelGate is what the egress proxy asks before each model call of
// sandbox id with budget b: an error once it is spent.
func (s *Service) modelGate(id string, b *Budget) func() error {
	return func() error {
		s.meter.mu.Lock()
		r := s.meter.runs[id]
		var u store.SandboxUsage
		if r != nil {
			u = r.u
		}
		s.meter.mu.Unlock()
		if b.MaxTokens != nil {
			if n := u.Model.InputTokens + u.Model.CachedInputTokens + u.Model.OutputTokens; n >= *b.MaxTokens {
				return fmt.Errorf("the budget is spent: %d tokens used of max_tokens %d", n, *b.MaxTokens)
			}
		}
		if b.MaxCostUSD != nil {
			wall := s.now().Sub(u.CreatedAt).Seconds()
			c := NewCost(u.Model.CostUSD, s.opts.Prices.ComputeCost(resources(u, max(wall, 0))))
			if c.Total >= *b.MaxCostUSD {
				return fmt.Errorf("the budget is spent: $%.6f used of max_cost_usd $%g", c.Total, *b.MaxCostUSD)
			}
		}
		return nil
	}
}
