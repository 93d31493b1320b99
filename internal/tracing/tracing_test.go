package tracing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/tracing"
	"github.com/airlockhq/airlock/internal/tracing/tracingtest"
)

func TestOffUnlessAsked(t *testing.T) {
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
	tr, err := tracing.Setup(context.Background())
	if err != nil || tr.Enabled {
		t.Fatalf("no OTEL_* set: enabled %v, %v", tr != nil && tr.Enabled, err)
	}
	_, span := tr.Tracer.Start(context.Background(), "x")
	span.End() // the no-op tracer works
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	if tr, err := tracing.Setup(context.Background()); err != nil || tr.Enabled {
		t.Errorf("OTEL_TRACES_EXPORTER=none: enabled %v, %v", tr != nil && tr.Enabled, err)
	}
}

func TestRefusesWhatItCannotDo(t *testing.T) {
	for _, env := range [][2]string{{"OTEL_TRACES_EXPORTER", "zipkin"}, {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}} {
		t.Run(env[1], func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv(env[0], env[1])
			if _, err := tracing.Setup(context.Background()); err == nil || !strings.Contains(err.Error(), env[0]) {
				t.Errorf("%s=%s: %v", env[0], env[1], err)
			}
		})
	}
}

func TestExportsOverOTLP(t *testing.T) {
	rcv := tracingtest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "airlock-test")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	tr, err := tracing.Setup(context.Background())
	if err != nil || !tr.Enabled {
		t.Fatalf("setup: %v", err)
	}
	ctx, parent := tr.Tracer.Start(context.Background(), "parent")
	_, child := tr.Tracer.Start(ctx, "child")
	child.End()
	parent.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := rcv.Spans()
	if len(got) != 2 {
		t.Fatalf("received %d spans: %+v", len(got), got)
	}
	for _, s := range got {
		if s.Service != "airlock-test" {
			t.Errorf("span %s of service %q", s.Name, s.Service)
		}
	}
	if got[0].Name != "child" || len(got[0].ParentID) == 0 || string(got[0].TraceID) != string(got[1].TraceID) {
		t.Errorf("child span: %+v", got[0])
	}
}
