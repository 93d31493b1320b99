// Package metrics is the daemon's Prometheus instrumentation: a private
// registry (never the global default, so two daemons in one test binary do
// not collide) holding the Go and process collectors and the few series the
// sandbox service moves. Every method is safe on a nil *Metrics, so the
// service runs the same with metrics off.
//
// It must never label a series with a sandbox, tenant or key id: each id
// would be a new series, and the registry would grow with every sandbox.
// Per-sandbox and per-tenant numbers are metering (GET .../metrics and
// /v1/usage), kept in the store.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the daemon's series. Create it with New.
type Metrics struct {
	reg             *prometheus.Registry
	creates         prometheus.Counter
	createFailures  prometheus.Counter
	createSeconds   prometheus.Histogram
	execSeconds     prometheus.Histogram
	egressDecisions *prometheus.CounterVec
	egressBytes     *prometheus.CounterVec
	modelTokens     *prometheus.CounterVec
	auditEvents     prometheus.Counter
	log             *slog.Logger
}

// New returns metrics on a fresh registry. log receives scrape errors
// (nil: slog.Default()).
func New(log *slog.Logger) *Metrics {
	if log == nil {
		log = slog.Default()
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		log: log,
		creates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "airlock_sandbox_creates_total",
			Help: "Sandboxes the service tried to boot (admitted creates), failed ones included.",
		}),
		createFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "airlock_sandbox_create_failures_total",
			Help: "Admitted creates that failed (the runtime, the egress proxy or the store refused).",
		}),
		// 5 ms (a warm-pool claim) to ~10 s (a cold boot on a loaded host).
		createSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "airlock_sandbox_create_duration_seconds",
			Help:    "Time from an admitted create to a running sandbox, successful creates only.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		// 1 ms (`true`) to ~70 min: an exec lasts as long as its command.
		execSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "airlock_exec_duration_seconds",
			Help:    "Time of a foreground exec (one-shot or streamed), from its start to its end.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 12),
		}),
		egressDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_egress_decisions_total",
			Help: "Connections and requests the egress proxy decided, by decision.",
		}, []string{"decision"}),
		egressBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_egress_bytes_total",
			Help: "Bytes through the egress proxy on the sandboxes' side: out from a sandbox, in to it.",
		}, []string{"direction"}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_model_tokens_total",
			Help: "Model tokens counted at the egress proxy from the model APIs' answers, by type (input is uncached input; output includes reasoning).",
		}, []string{"type"}),
		auditEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "airlock_audit_events_total",
			Help: "Audit events recorded.",
		}),
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.creates, m.createFailures, m.createSeconds, m.execSeconds, m.egressDecisions, m.egressBytes, m.modelTokens, m.auditEvents)
	// The labelled series exist from the start, so a rate() over them has
	// a zero to start from rather than a gap.
	for _, d := range []string{"allowed", "denied"} {
		m.egressDecisions.WithLabelValues(d)
	}
	for _, d := range []string{"out", "in"} {
		m.egressBytes.WithLabelValues(d)
	}
	for _, t := range []string{"input", "cached_input", "output"} {
		m.modelTokens.WithLabelValues(t)
	}
	return m
}

// Handler serves the registry in the Prometheus text (or negotiated)
// format. A failing collector leaves its series out and is logged; the
// rest is still served.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return handlerFor(m.reg, m.log)
}

func handlerFor(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      slogLogger{log},
		ErrorHandling: promhttp.ContinueOnError,
		Timeout:       30 * time.Second,
	})
}

// Gatherer is the registry, for tests and for embedding in another one.
func (m *Metrics) Gatherer() prometheus.Gatherer {
	if m == nil {
		return prometheus.Gatherers{}
	}
	return m.reg
}

// CreateDone counts an admitted create and, if it succeeded, times it.
func (m *Metrics) CreateDone(d time.Duration, err error) {
	if m == nil {
		return
	}
	m.creates.Inc()
	if err != nil {
		m.createFailures.Inc()
		return
	}
	m.createSeconds.Observe(d.Seconds())
}

// ExecDone times a foreground exec.
func (m *Metrics) ExecDone(d time.Duration) {
	if m == nil {
		return
	}
	m.execSeconds.Observe(d.Seconds())
}

// EgressDecision counts one decision of the egress proxy ("allowed" or
// "denied") about a connection or request.
func (m *Metrics) EgressDecision(decision string) {
	if m == nil || decision == "" {
		return
	}
	m.egressDecisions.WithLabelValues(decision).Inc()
}

// EgressBytes adds bytes sent out of and into sandboxes.
func (m *Metrics) EgressBytes(out, in int64) {
	if m == nil {
		return
	}
	if out > 0 {
		m.egressBytes.WithLabelValues("out").Add(float64(out))
	}
	if in > 0 {
		m.egressBytes.WithLabelValues("in").Add(float64(in))
	}
}

// ModelTokens adds one model call's tokens.
func (m *Metrics) ModelTokens(input, cached, output int64) {
	if m == nil {
		return
	}
	m.modelTokens.WithLabelValues("input").Add(float64(input))
	m.modelTokens.WithLabelValues("cached_input").Add(float64(cached))
	m.modelTokens.WithLabelValues("output").Add(float64(output))
}

// AuditEvent counts one recorded audit event.
func (m *Metrics) AuditEvent() {
	if m == nil {
		return
	}
	m.auditEvents.Inc()
}

// CountStates makes the airlock_sandboxes gauge call count at every
// scrape. Counting the store at scrape time, rather than moving a gauge on
// each transition, keeps the number right across restarts and across
// daemons sharing a store. Call it once.
func (m *Metrics) CountStates(count func(context.Context) (map[string]int, error)) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&stateCollector{count: count, desc: prometheus.NewDesc("airlock_sandboxes",
		"Sandbox records by state.", []string{"state"}, nil)})
}

// stateCollector reads the sandboxes by state when scraped.
type stateCollector struct {
	count func(context.Context) (map[string]int, error)
	desc  *prometheus.Desc
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := c.count(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for state, v := range n {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(v), state)
	}
}

// slogLogger hands promhttp's errors to slog.
type slogLogger struct{ log *slog.Logger }

func (l slogLogger) Println(v ...any) { l.log.Error("metrics: scrape", "err", v) }
