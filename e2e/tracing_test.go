package e2e

import (
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/tracing/tracingtest"
)

// TestTracing: with OTEL_EXPORTER_OTLP_ENDPOINT set, the daemon exports a
// span per create and per command over OTLP/HTTP, the command's a child
// of the trace the request carried (traceparent).
func TestTracing(t *testing.T) {
	rcv := tracingtest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "airlock-e2e")
	s := startServer(t, "")
	c := s.admin()
	sb := must[client.Sandbox](t)(c.CreateSandbox(ctx, client.CreateRequest{}))
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, err := http.NewRequestWithContext(ctx, "POST", s.url+"/v1/sandboxes/"+sb.ID+"/exec", strings.NewReader(`{"command":"exit 3"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.adminKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	s.stop() // a graceful stop sends what is buffered
	var create, exec *tracingtest.Span
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && (create == nil || exec == nil); time.Sleep(50 * time.Millisecond) {
		for _, sp := range rcv.Spans() {
			switch {
			case sp.Name == "sandbox.create" && sp.Attrs["airlock.sandbox_id"] == sb.ID:
				create = &sp
			case sp.Name == "sandbox.exec" && sp.Attrs["airlock.sandbox_id"] == sb.ID:
				exec = &sp
			}
		}
	}
	if create == nil || exec == nil {
		t.Fatalf("spans received: %+v", rcv.Spans())
	}
	if create.Service != "airlock-e2e" || create.Attrs["airlock.tenant_id"] == "" || create.Error {
		t.Errorf("create span: %+v", *create)
	}
	if hex.EncodeToString(exec.TraceID) != traceID || hex.EncodeToString(exec.ParentID) != "00f067aa0ba902b7" {
		t.Errorf("exec span is not a child of the request's trace: %+v", *exec)
	}
	if exec.Attrs["airlock.exit_code"] != "3" || !strings.HasPrefix(exec.Attrs["airlock.exec_id"], "ex-") {
		t.Errorf("exec span attributes: %v", exec.Attrs)
	}
}
