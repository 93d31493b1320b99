package metrics

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Replica is what one control-plane replica serves at /metrics, itself,
// never forwarded to the leader: a scrape of every pod then gets each
// series once. The daemon-wide series (sandboxes, creates, egress...) come
// from the leader alone, which runs the daemon; every replica gives its own
// process's (Go and process collectors) and airlock_replica_leader.
type Replica struct {
	proc *prometheus.Registry // Go and process: a follower's own
	role *prometheus.Registry // airlock_replica_leader
	log  *slog.Logger
}

// NewReplica returns a replica's metrics; leads says whether it leads now.
// log receives scrape errors (nil: slog.Default()).
func NewReplica(leads func() bool, log *slog.Logger) *Replica {
	if log == nil {
		log = slog.Default()
	}
	r := &Replica{proc: prometheus.NewRegistry(), role: prometheus.NewRegistry(), log: log}
	r.proc.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.role.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "airlock_replica_leader",
		Help: "1 on the control-plane replica that leads (and alone serves the daemon-wide series), 0 on the others.",
	}, func() float64 {
		if leads() {
			return 1
		}
		return 0
	}))
	return r
}

// Handler serves the replica's series: with daemon (the leader's, which
// holds its process's series too), the daemon's and the leader gauge;
// with nil (a follower), its process's and the gauge.
func (r *Replica) Handler(daemon *Metrics) http.Handler {
	g := prometheus.Gatherers{r.proc, r.role}
	if daemon != nil {
		g = prometheus.Gatherers{daemon.reg, r.role}
	}
	return handlerFor(g, r.log)
}
