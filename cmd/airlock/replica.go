package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/internal/e2b"
	"github.com/airlockhq/airlock/internal/metrics"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// A control plane runs as several replicas on one PostgreSQL. One of them,
// elected, leads: it runs the whole daemon (sandbox manager, reapers,
// webhook delivery, the task queue, node heartbeats and placement) and
// answers every API call. The others forward each call to it, streams
// included, and take over when it dies: the new leader starts the daemon
// as a restarted one does, re-attaching every sandbox from the store and
// the nodes.
//
// Why one leader serves everything rather than each replica a share: a
// sandbox's live state on the control plane (its egress proxy listeners,
// its audit chain's head, its meter) must have one owner at a time, and
// handing ownership over between live replicas is more than this first
// cut does. Replicas buy availability, not throughput.

// leaderElector is what a replica asks about leadership
// (internal/cluster: a Lease in Kubernetes, an advisory lock otherwise).
type leaderElector interface {
	// Run campaigns until ctx ends.
	Run(ctx context.Context)
	IsLeader() bool
	// Leader is the identity of the replica that leads ("" if none is
	// known): its advertised URL.
	Leader() string
}

// forwardedHeader marks a call a replica forwarded, so that a call that
// reaches a replica which no longer leads is refused rather than bounced
// on.
const forwardedHeader = "X-Airlock-Forwarded-By"

// replica is one control-plane replica's HTTP face.
type replica struct {
	self  string        // its advertised URL
	el    leaderElector // its identity there: self, signed (replica_identity.go)
	pub   ed25519.PublicKey
	badID sync.Map // leader identities whose signature failed, logged once
	// checked is the latest leader identity whose signature checked, and
	// its URL: every forwarded call asks, and the leader rarely changes.
	checked atomic.Pointer[[2]string]
	start   func(ctx context.Context) (*leaderTerm, error)
	watch   time.Duration // how often leadership is looked at
	// e2bDomain is --e2b-domain: a sandbox's host name is forwarded
	// whatever its path (its /healthz is the sandbox's).
	e2bDomain string
	// metrics is what this replica answers at /metrics itself
	// (replica_metrics.go), to the admin keys auth finds; nil forwards
	// /metrics to the leader as any call.
	metrics *metrics.Replica
	auth    func(ctx context.Context, credential string) (tenancy.Principal, error)

	mu      sync.Mutex
	term    *leaderTerm // while this replica leads and its daemon runs
	proxies map[string]*httputil.ReverseProxy
}

// leaderTerm is the daemon a replica runs while it leads.
type leaderTerm struct {
	handler http.Handler
	metrics *metrics.Metrics // the daemon's
	// end ends its streams and closes the daemon; the sandboxes run on
	// for the next leader, as across a daemon restart.
	end func()
}

// run follows the election until ctx ends: a replica that comes to lead
// starts its daemon, one that stops leading ends it.
func (rp *replica) run(ctx context.Context) {
	go rp.el.Run(ctx)
	t := time.NewTicker(rp.watch)
	defer t.Stop()
	for {
		leads := rp.el.IsLeader()
		rp.mu.Lock()
		term := rp.term
		rp.mu.Unlock()
		switch {
		case leads && term == nil:
			fmt.Fprintf(os.Stderr, "airlock: replica %s leads: starting the daemon\n", rp.self)
			term, err := rp.start(ctx)
			if err != nil {
				fmt.Fprintf(os.Stderr, "airlock: replica %s: start the daemon: %v\n", rp.self, err)
				break
			}
			rp.mu.Lock()
			rp.term = term
			rp.mu.Unlock()
			fmt.Fprintf(os.Stderr, "airlock: replica %s leads: daemon up\n", rp.self)
		case !leads && term != nil:
			fmt.Fprintf(os.Stderr, "airlock: replica %s no longer leads: closing the daemon\n", rp.self)
			rp.mu.Lock()
			rp.term = nil
			rp.mu.Unlock()
			term.end()
		}
		select {
		case <-ctx.Done():
			rp.mu.Lock()
			term := rp.term
			rp.term = nil
			rp.mu.Unlock()
			if term != nil {
				term.end()
			}
			return
		case <-t.C:
		}
	}
}

func (rp *replica) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rp.mu.Lock()
	term := rp.term
	rp.mu.Unlock()
	leader := rp.leader()
	path := r.URL.Path
	if e2b.IsSandboxHost(r.Host, rp.e2bDomain) {
		path = ""
	}
	switch path {
	case "/healthz":
		writeReplicaJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	case "/readyz":
		if term == nil && (leader == "" || leader == rp.self) {
			replicaUnavailable(w, "no control-plane leader yet")
			return
		}
		if term != nil {
			leader = rp.self
		}
		writeReplicaJSON(w, http.StatusOK, map[string]string{"status": "ready", "replica": rp.self, "leader": leader})
		return
	case "/metrics":
		if rp.metrics != nil {
			rp.serveMetrics(w, r, term)
			return
		}
	}
	if term != nil {
		term.handler.ServeHTTP(w, r)
		return
	}
	switch {
	case leader == "" || leader == rp.self:
		// Elected but not up yet, or no leader: the client retries.
		replicaUnavailable(w, "the control plane is electing a leader")
	case r.Header.Get(forwardedHeader) != "":
		replicaUnavailable(w, "leadership moved while the call was forwarded")
	default:
		p, err := rp.proxy(leader)
		if err != nil {
			replicaUnavailable(w, err.Error())
			return
		}
		p.ServeHTTP(w, r)
	}
}

// leader is the URL of the replica that leads, "" when none is known or
// its identity's signature does not check.
func (rp *replica) leader() string {
	id := rp.el.Leader()
	if id == "" {
		return ""
	}
	if c := rp.checked.Load(); c != nil && c[0] == id {
		return c[1]
	}
	url, ok := identityURL(rp.pub, id)
	if !ok {
		if _, seen := rp.badID.LoadOrStore(id, true); !seen {
			fmt.Fprintf(os.Stderr, "airlock: replica %s: the leader's identity %q is not signed with this control plane's key: not forwarding to it\n", rp.self, id)
		}
		return ""
	}
	rp.checked.Store(&[2]string{id, url})
	return url
}

// proxy returns the reverse proxy to the leader at base.
func (rp *replica) proxy(base string) (*httputil.ReverseProxy, error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if p, ok := rp.proxies[base]; ok {
		return p, nil
	}
	target, err := url.Parse(base)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil, fmt.Errorf("the leader's URL %q is not http(s)://HOST:PORT", base)
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// Links the leader writes (E2B's hosts, the console's) are
			// the ones the client used.
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
			pr.Out.Header.Set(forwardedHeader, rp.self)
		},
		// Streams (SSE, output follows) go out as they come.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			replicaUnavailable(w, "forward to the leader: "+err.Error())
		},
	}
	if rp.proxies == nil {
		rp.proxies = map[string]*httputil.ReverseProxy{}
	}
	rp.proxies[base] = p
	return p, nil
}

// replicaUnavailable answers 503 in the API's error shape, which clients
// retry (Retry-After).
func replicaUnavailable(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", "1")
	replicaError(w, http.StatusServiceUnavailable, "unavailable", msg)
}

// replicaError answers in the API's error shape.
func replicaError(w http.ResponseWriter, status int, code, msg string) {
	writeReplicaJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeReplicaJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// leading says whether this replica's daemon runs (it leads and is up).
func (rp *replica) leading() bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.term != nil
}
