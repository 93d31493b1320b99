package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"

	"github.com/airlockhq/airlock/client"
)

// spendFlags are task run's budget and retry flags.
type spendFlags struct {
	usd    *float64
	tokens *int64
	retry  *int
}

// maxRetries is the server's bound on retry.max.
const maxRetries = 10

func addSpendFlags(f *flag.FlagSet) spendFlags {
	return spendFlags{
		usd:    f.Float64("budget-usd", 0, "cap the task's cost, model calls and compute, in USD (the server needs a price table)"),
		tokens: f.Int64("budget-tokens", 0, "cap the task's model tokens: input, cached input and output together"),
		retry:  f.Int("retry", 0, "try the task again, in a new sandbox, up to `N` times (0 to 10) after an infrastructure failure"),
	}
}

// apply sets the budget and retry given on req; a value out of range is a
// usage error, found before anything is sent.
func (s spendFlags) apply(f *flag.FlagSet, req *client.TaskRequest) error {
	set := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var b client.Budget
	if set["budget-usd"] {
		if !(*s.usd > 0) || math.IsInf(*s.usd, 0) {
			return badInput("task run", "--budget-usd %v: want a number of dollars above 0", *s.usd)
		}
		b.MaxCostUSD = s.usd
	}
	if set["budget-tokens"] {
		if *s.tokens <= 0 {
			return badInput("task run", "--budget-tokens %d: want a number of tokens above 0", *s.tokens)
		}
		b.MaxTokens = s.tokens
	}
	if b.MaxCostUSD != nil || b.MaxTokens != nil {
		req.Budget = &b
	}
	if *s.retry < 0 || *s.retry > maxRetries {
		return badInput("task run", "--retry %d: want 0 to %d", *s.retry, maxRetries)
	}
	if *s.retry > 0 {
		req.Retry = &client.TaskRetry{Max: *s.retry}
	}
	return nil
}

// usdText is an amount of dollars to the millionth, without trailing
// zeros: model calls cost fractions of a cent.
func usdText(v float64) string {
	return "$" + strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}

// costCell is a cost for a table: "-" on a server without a price table.
func costCell(c *client.Cost) string {
	if c == nil {
		return "-"
	}
	return usdText(c.Total)
}

// tokensCell is the tokens counted for a table (input, cached input and
// output: what a token budget counts), "-" with no model call.
func tokensCell(m client.ModelTotals) string {
	if m.Calls == 0 {
		return "-"
	}
	return strconv.FormatInt(m.Tokens(), 10)
}

// callsCell is the model calls for a table, those whose usage could not
// be read said apart.
func callsCell(m client.ModelTotals) string {
	if m.UnmeteredCalls == 0 {
		return strconv.FormatInt(m.Calls, 10)
	}
	return fmt.Sprintf("%d (%d unmetered)", m.Calls, m.UnmeteredCalls)
}

// spendLine says what a task's model calls used and what it cost, or ""
// when it made none and has no cost.
func spendLine(u client.TaskUsage, c *client.Cost) string {
	line := ""
	if u.Calls > 0 {
		line = fmt.Sprintf("%s model calls: %d in, %d cached, %d out (%d reasoning) tokens", callsCell(u.ModelTotals),
			u.InputTokens, u.CachedInputTokens, u.OutputTokens, u.ReasoningTokens)
	}
	if c != nil {
		if line != "" {
			line += "; "
		}
		line += fmt.Sprintf("cost %s (model %s, compute %s)", usdText(c.Total), usdText(c.Model), usdText(c.Compute))
	}
	return line
}

// callLine is one model call of a usage event from the egress proxy.
func callLine(c *client.ModelCall) string {
	if c.Refused != "" {
		return fmt.Sprintf("model call to %s refused: %s", c.Host, c.Refused)
	}
	what := c.Model
	if what == "" {
		what = c.API
	}
	if c.InputTokens == nil && c.OutputTokens == nil {
		return fmt.Sprintf("model call %s (%s, status %d): usage unknown", what, c.Host, c.Status)
	}
	n := func(p *int64) string {
		if p == nil {
			return "?"
		}
		return strconv.FormatInt(*p, 10)
	}
	line := fmt.Sprintf("model call %s: %s in, %s cached, %s out tokens", what, n(c.InputTokens), n(c.CachedInputTokens), n(c.OutputTokens))
	if c.CostUSD != nil {
		line += ", " + usdText(*c.CostUSD)
	}
	return line
}
