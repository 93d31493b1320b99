package sandbox

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// The service's spans: one per create and per command, children of the
// API request's remote parent when it sent one (traceparent). Attributes
// name the sandbox, tenant and command, never its text or environment.

func (s *Service) span(ctx context.Context, name string, c Caller, id string) (context.Context, trace.Span) {
	return s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("airlock.tenant_id", c.TenantID), attribute.String("airlock.sandbox_id", id)))
}

func endSpan(span trace.Span, err error, attrs ...attribute.KeyValue) {
	span.SetAttributes(attrs...)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func exitAttrs(r ExecResult) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("airlock.exec_id", r.ExecID), attribute.Int("airlock.exit_code", r.ExitCode),
		attribute.Bool("airlock.timed_out", r.TimedOut), attribute.Bool("airlock.oom_killed", r.OOMKilled)}
}

// Create validates the request, checks the tenant's quota and inserts the
// record atomically, then boots the sandbox. An unknown template is
// ErrNotFound (like any other missing resource); a sandbox token cannot
// create sandboxes (ErrInvalid), since it exists to reach one sandbox only.
func (s *Service) Create(ctx context.Context, c Caller, req CreateRequest) (sandboxrec.Sandbox, error) {
	ctx, span := s.span(ctx, "sandbox.create", c, "")
	rec, err := s.create(ctx, c, req, origin{})
	endSpan(span, err, attribute.String("airlock.sandbox_id", rec.ID), attribute.String("airlock.template", rec.Template),
		attribute.Float64("airlock.cpus", rec.CPUs), attribute.Int64("airlock.memory_mb", rec.MemoryMB))
	return rec, err
}

// Exec runs req to its end and returns its output, each stream capped at
// OutputCap and made valid UTF-8 (the result is JSON text).
func (s *Service) Exec(ctx context.Context, c Caller, id string, req ExecRequest) (ExecResult, error) {
	ctx, span := s.span(ctx, "sandbox.exec", c, id)
	res, err := s.runExec(ctx, c, id, req)
	endSpan(span, err, exitAttrs(res)...)
	return res, err
}

// ExecStream runs req and hands its output to out as it comes (see
// runExecStream).
func (s *Service) ExecStream(ctx context.Context, c Caller, id string, req ExecRequest, out Stream) (ExecResult, error) {
	ctx, span := s.span(ctx, "sandbox.exec", c, id)
	res, err := s.runExecStream(ctx, c, id, req, out)
	endSpan(span, err, append(exitAttrs(res), attribute.Bool("airlock.stream", true))...)
	return res, err
}

// StartBackground starts req and returns at once (see startBackground).
// Its span covers the start, not the process's life.
func (s *Service) StartBackground(ctx context.Context, c Caller, id string, req ExecRequest) (ProcInfo, error) {
	ctx, span := s.span(ctx, "sandbox.exec.start", c, id)
	p, err := s.startBackground(ctx, c, id, req)
	endSpan(span, err, attribute.String("airlock.exec_id", p.ExecID), attribute.Int("airlock.pid", p.Pid), attribute.Bool("airlock.background", true))
	return p, err
}

// SessionExec runs one command in a session's shell (see sessionExec).
func (s *Service) SessionExec(ctx context.Context, c Caller, id, sid string, req SessionExecRequest) (SessionExecResult, error) {
	ctx, span := s.span(ctx, "sandbox.session.exec", c, id)
	res, err := s.sessionExec(ctx, c, id, sid, req)
	endSpan(span, err, attribute.String("airlock.session_id", sid), attribute.Int("airlock.exit_code", res.ExitCode), attribute.Bool("airlock.timed_out", res.TimedOut))
	return res, err
}
