// Package tracing sets up OpenTelemetry traces from the standard OTEL_*
// environment variables. It is off unless they ask for it: with
// OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint set
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), spans
// go to that endpoint over OTLP/HTTP (protobuf). The exporter reads its
// own variables (endpoint, headers, timeout, TLS files), the SDK reads the
// sampler's (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG) and the
// resource's (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES); the service
// name defaults to "airlock". The W3C trace context of incoming requests
// (traceparent) makes the daemon's spans children of the caller's.
package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of Airlock's spans.
const Name = "github.com/airlockhq/airlock"

// Tracing is what Setup made: the tracer to start spans with (a no-op one
// when tracing is off) and how to stop.
type Tracing struct {
	Tracer  trace.Tracer
	Enabled bool
	tp      *sdktrace.TracerProvider
}

// Setup reads the environment and starts an exporter if it asks for one.
// An unsupported setting is an error rather than traces silently going
// nowhere.
func Setup(ctx context.Context) (*Tracing, error) {
	getenv := os.Getenv
	off := &Tracing{Tracer: noop.NewTracerProvider().Tracer(Name)}
	if v := strings.ToLower(strings.TrimSpace(getenv("OTEL_SDK_DISABLED"))); v == "true" {
		return off, nil
	}
	exporter := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")))
	endpoint := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	switch {
	case exporter == "none", exporter == "" && !endpoint:
		return off, nil
	case exporter != "" && exporter != "otlp":
		return nil, fmt.Errorf("tracing: OTEL_TRACES_EXPORTER=%q: only otlp (or none) is supported", exporter)
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := getenv(k); p != "" {
			if p != "http/protobuf" {
				return nil, fmt.Errorf("tracing: %s=%q: only http/protobuf is supported", k, p)
			}
			break
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// Later detectors win: the environment's service name over ours.
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "airlock")), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return &Tracing{Tracer: tp.Tracer(Name), Enabled: true, tp: tp}, nil
}

// Shutdown sends what is buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}
