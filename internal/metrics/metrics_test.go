package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestNilSafe: a service without metrics calls the same methods.
func TestNilSafe(t *testing.T) {
	var m *Metrics
	m.CreateDone(time.Second, nil)
	m.CreateDone(time.Second, errors.New("x"))
	m.ExecDone(time.Second)
	m.EgressDecision("allowed")
	m.EgressBytes(1, 2)
	m.AuditEvent()
	m.CountStates(nil)
	if fams, err := m.Gatherer().Gather(); err != nil || len(fams) != 0 {
		t.Errorf("nil gatherer: %d families, %v", len(fams), err)
	}
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != 404 {
		t.Errorf("nil handler: %d", w.Code)
	}
}

func scrape(t *testing.T, m *Metrics) (map[string]float64, string) {
	t.Helper()
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != 200 {
		t.Fatalf("scrape: %d %s", w.Code, w.Body)
	}
	body := w.Body.String()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		if !strings.HasPrefix(name, "airlock_") {
			continue
		}
		for _, x := range f.GetMetric() {
			key := name
			for _, l := range x.GetLabel() {
				key += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			switch {
			case x.GetCounter() != nil:
				out[key] = x.GetCounter().GetValue()
			case x.GetGauge() != nil:
				out[key] = x.GetGauge().GetValue()
			case x.GetHistogram() != nil:
				out[key] = float64(x.GetHistogram().GetSampleCount())
				out[key+"_sum"] = x.GetHistogram().GetSampleSum()
			}
		}
	}
	return out, body
}

func TestSeries(t *testing.T) {
	m := New(slog.New(slog.DiscardHandler))
	m.CountStates(func(context.Context) (map[string]int, error) {
		return map[string]int{"running": 3, "failed": 1}, nil
	})
	m.CreateDone(250*time.Millisecond, nil)
	m.CreateDone(time.Second, errors.New("no uid range"))
	m.ExecDone(2 * time.Second)
	m.EgressDecision("denied")
	m.EgressDecision("")
	m.EgressBytes(10, 0)
	m.AuditEvent()
	m.ModelTokens(1000, 200, 300)
	m.ModelTokens(10, 0, 5)
	got, _ := scrape(t, m)
	want := map[string]float64{
		"airlock_sandboxes{state=running}": 3, "airlock_sandboxes{state=failed}": 1,
		"airlock_sandbox_creates_total": 2, "airlock_sandbox_create_failures_total": 1,
		"airlock_sandbox_create_duration_seconds": 1, "airlock_sandbox_create_duration_seconds_sum": 0.25,
		"airlock_exec_duration_seconds": 1, "airlock_exec_duration_seconds_sum": 2,
		"airlock_egress_decisions_total{decision=allowed}": 0, "airlock_egress_decisions_total{decision=denied}": 1,
		"airlock_egress_bytes_total{direction=out}": 10, "airlock_egress_bytes_total{direction=in}": 0,
		"airlock_audit_events_total":             1,
		"airlock_model_tokens_total{type=input}": 1010, "airlock_model_tokens_total{type=cached_input}": 200,
		"airlock_model_tokens_total{type=output}": 305,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestStateErrorKeepsTheRest: a store that cannot count leaves its gauge
// out of the scrape, not the whole scrape.
func TestStateErrorKeepsTheRest(t *testing.T) {
	m := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	m.CountStates(func(context.Context) (map[string]int, error) { return nil, errors.New("database is locked") })
	m.AuditEvent()
	got, body := scrape(t, m)
	if _, ok := got["airlock_audit_events_total"]; !ok || strings.Contains(body, "airlock_sandboxes{") {
		t.Errorf("scrape with a failing state count:\n%s", body)
	}
	if !strings.Contains(body, "go_goroutines") {
		t.Error("the Go collector is missing")
	}
}
