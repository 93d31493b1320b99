package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// What a task's model calls used is counted where it is spent: at the
// egress proxy of its sandbox (sandbox.ModelCall), from each model API's
// own answer. Each call becomes a usage event (source "proxy"); what the
// harness says it used stays beside it (usage events of source
// "harness", and Usage.Reported), so a discrepancy shows.

// Sources of usage events.
const (
	SourceProxy   = "proxy"
	SourceHarness = "harness"
)

// EventBudget says the task's budget is spent: a model call was refused.
const EventBudget = "budget"

// errBudget ends a task whose budget is spent.
var errBudget = errors.New("budget")

// ModelCall is told of each model call through a sandbox's egress proxy:
// the task running in that sandbox gets a usage event, and when the call
// was refused for its budget, a budget event and its end.
func (s *Service) ModelCall(c sandbox.ModelCall) {
	s.mu.Lock()
	id := s.bySandbox[c.SandboxID]
	r := s.running[id]
	s.mu.Unlock()
	if id == "" {
		return
	}
	call := c
	call.SandboxID, call.TenantID = "", ""
	s.emitLive(id, c.SandboxID, Event{Type: EventUsage, Source: SourceProxy, Call: &call})
	if c.Refused == "" {
		return
	}
	s.emitLive(id, c.SandboxID, Event{Type: EventBudget, Reason: c.Refused})
	if r != nil {
		r.cancel(fmt.Errorf("%w: %s", errBudget, c.Refused))
	}
}

// watch links sandbox sb to the running task id for ModelCall; unwatch
// ends that.
func (s *Service) watch(sb, id string) {
	s.mu.Lock()
	s.bySandbox[sb] = id
	s.mu.Unlock()
}

func (s *Service) unwatch(sb string) {
	s.mu.Lock()
	delete(s.bySandbox, sb)
	s.mu.Unlock()
}

// live says whether a stored event came from outside the harness's
// output (the proxy's usage, a spent budget): a resumed task makes its
// harness's events again, never these, so they are not skipped then.
func live(r taskrec.Event) bool {
	return r.Type == EventBudget || r.Type == EventAttempt || r.Type == EventUsage && strings.Contains(string(r.Data), `"source":"`+SourceProxy+`"`)
}

// Usage is what a task used and cost, over all its attempts: its model
// calls as the egress proxy counted them, what the harness reported
// beside it, and (with a price table) the cost.
type Usage struct {
	sandbox.ModelTotals
	// Reported is what the harness said it used.
	Reported ReportedUsage `json:"reported"`
	// CostUSD is nil when the server has no price table (the API shows
	// it beside usage, as the task's cost_usd).
	CostUSD *sandbox.Cost `json:"-"`
}

// ReportedUsage is a harness's own token counts.
type ReportedUsage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// usage sums what the sandboxes of t's attempts used (the current one
// live while it runs).
func (s *Service) usage(ctx context.Context, t taskrec.Task, attempts []Attempt) Usage {
	u := Usage{Reported: ReportedUsage{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens}}
	ids := make([]string, 0, len(attempts)+1)
	for _, a := range attempts {
		ids = append(ids, a.SandboxID)
	}
	if len(ids) == 0 && t.SandboxID != "" {
		ids = append(ids, t.SandboxID)
	}
	c := sandbox.Caller{TenantID: t.TenantID}
	priced := false
	var cost sandbox.Cost
	for _, id := range ids {
		if id == "" {
			continue
		}
		m, err := s.m.SandboxMetrics(ctx, c, id)
		if err != nil {
			continue // never created, or its record is gone
		}
		u.Calls += m.Model.Calls
		u.UnmeteredCalls += m.Model.UnmeteredCalls
		u.InputTokens += m.Model.InputTokens
		u.CachedInputTokens += m.Model.CachedInputTokens
		u.OutputTokens += m.Model.OutputTokens
		u.ReasoningTokens += m.Model.ReasoningTokens
		if m.CostUSD != nil {
			priced = true
			cost.Add(*m.CostUSD)
		}
	}
	if priced || s.m.Prices() != nil {
		u.CostUSD = &cost
	}
	return u
}
