package tasks

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// A task is exported, once it has ended, as one OpenTelemetry trace: the
// task's span (created to ended), a child per model call (its tokens,
// cost and latency, from the egress proxy's count) and per tool call (to
// its result) and command of the harness. Built from the stored events,
// so a task that outlived a daemon restart is whole.

// exportTrace sends t's trace through Options.Tracer (nil: none).
func (s *Service) exportTrace(ctx context.Context, t taskrec.Task) {
	tr := s.opts.Tracer
	if tr == nil {
		return
	}
	var evs []Event
	for after := int64(0); ; {
		page, err := s.events(ctx, t.ID, after, 1000)
		if err != nil {
			s.log.Warn("task: trace: read events", "task", t.ID, "err", err)
			return
		}
		evs = append(evs, page...)
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].Seq
	}
	start := t.StartedAt
	if start.IsZero() {
		start = t.CreatedAt
	}
	_, root := tr.Start(context.Background(), "task", trace.WithTimestamp(start), trace.WithAttributes(
		attribute.String("airlock.task_id", t.ID), attribute.String("airlock.tenant_id", t.TenantID),
		attribute.String("airlock.harness", t.Harness), attribute.String("airlock.task_state", t.State),
		attribute.String("airlock.sandbox_id", t.SandboxID)))
	if t.Reason != "" {
		root.SetAttributes(attribute.String("airlock.reason", t.Reason))
	}
	if t.State != taskrec.Succeeded {
		root.SetStatus(codes.Error, t.State)
	}
	rctx := trace.ContextWithSpan(context.Background(), root)
	results := map[string]Event{}
	for _, e := range evs {
		if e.Type == EventToolResult && e.ID != "" {
			results[e.ID] = e
		}
	}
	var calls, input, cached, output int64
	var usd float64
	for _, e := range evs {
		switch {
		case e.Type == EventUsage && e.Call != nil:
			c := e.Call
			end := c.Time
			_, sp := tr.Start(rctx, "model.call", trace.WithTimestamp(end.Add(-time.Duration(c.DurationMS*float64(time.Millisecond)))),
				trace.WithAttributes(attribute.String("airlock.host", c.Host), attribute.Int("http.status_code", c.Status),
					attribute.String("airlock.api", c.API), attribute.String("airlock.model", c.Model),
					attribute.Float64("airlock.duration_ms", c.DurationMS)))
			calls++
			for _, f := range []struct {
				key string
				v   *int64
				sum *int64
			}{{"airlock.input_tokens", c.InputTokens, &input}, {"airlock.cached_input_tokens", c.CachedInputTokens, &cached},
				{"airlock.output_tokens", c.OutputTokens, &output}, {"airlock.reasoning_tokens", c.ReasoningTokens, nil}} {
				if f.v != nil {
					sp.SetAttributes(attribute.Int64(f.key, *f.v))
					if f.sum != nil {
						*f.sum += *f.v
					}
				}
			}
			if c.CostUSD != nil {
				sp.SetAttributes(attribute.Float64("airlock.cost_usd", *c.CostUSD))
				usd += *c.CostUSD
			}
			if c.Refused != "" {
				sp.SetStatus(codes.Error, c.Refused)
			}
			sp.End(trace.WithTimestamp(end))
		case e.Type == EventToolCall:
			end := e.Time
			res, ok := results[e.ID]
			if ok {
				end = res.Time
			}
			_, sp := tr.Start(rctx, "tool."+e.Name, trace.WithTimestamp(e.Time), trace.WithAttributes(
				attribute.String("airlock.tool", e.Name), attribute.String("airlock.tool_call_id", e.ID)))
			if ok && res.IsError {
				sp.SetStatus(codes.Error, "the tool failed")
			}
			sp.End(trace.WithTimestamp(end))
		case e.Type == EventCommand:
			_, sp := tr.Start(rctx, "command", trace.WithTimestamp(e.Time), trace.WithAttributes(
				attribute.String("airlock.command", truncUTF8(strings.Join(e.Argv, " "), 1024))))
			if e.ExitCode != nil {
				sp.SetAttributes(attribute.Int("airlock.exit_code", *e.ExitCode))
				if *e.ExitCode != 0 {
					sp.SetStatus(codes.Error, "the command failed")
				}
			}
			sp.End(trace.WithTimestamp(e.Time))
		}
	}
	root.SetAttributes(attribute.Int64("airlock.model_calls", calls), attribute.Int64("airlock.input_tokens", input),
		attribute.Int64("airlock.cached_input_tokens", cached), attribute.Int64("airlock.output_tokens", output),
		attribute.Float64("airlock.model_cost_usd", usd))
	end := t.EndedAt
	if end.IsZero() {
		end = time.Now()
	}
	root.End(trace.WithTimestamp(end))
}
