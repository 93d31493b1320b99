package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Member is a control-plane replica as the others see it: its id and the
// URL they reach it on.
type Member struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	RenewedAt time.Time `json:"renewed_at"`
}

// Members is the set of live control-plane replicas.
type Members interface {
	// Join announces self and renews it until ctx ends, then takes it
	// out. It returns once ctx has ended, or at once when self cannot be
	// announced at all (a bad id).
	Join(ctx context.Context, self Member) error
	// List returns the live members, by id.
	List(ctx context.Context) ([]Member, error)
}

// MembersOptions tune a Members; zero fields take the defaults.
type MembersOptions struct {
	// RenewEvery is how often a member renews itself (default 5 s).
	RenewEvery time.Duration
	// Duration is how long a renewal lasts: a member not renewed for it
	// is not live (default 15 s; whole seconds on Leases).
	Duration time.Duration
	Logger   *slog.Logger
}

// Defaults of MembersOptions and of node Leases.
const (
	DefaultRenewEvery    = 5 * time.Second
	DefaultLeaseFor      = 15 * time.Second
	maxMemberID          = 63
	leaveTimeout         = 5 * time.Second
	renewTimeout         = 5 * time.Second
	componentLabel       = "app.kubernetes.io/component"
	partOfLabel          = "app.kubernetes.io/part-of"
	partOf               = "airlock"
	replicaComponent     = "airlock-replica"
	replicaLeasePrefix   = "airlock-replica-"
	annotationURL        = "airlock.dev/url"
	annotationAddr       = "airlock.dev/addr"
	annotationVersion    = "airlock.dev/version"
	annotationProtocol   = "airlock.dev/protocol"
	annotationCapacity   = "airlock.dev/capacity"
	annotationUse        = "airlock.dev/use"
	annotationDraining   = "airlock.dev/draining"
	annotationDrained    = "airlock.dev/drained"
	nodeComponent        = "airlock-node"
	nodeLeasePrefix      = "airlock-node-"
	maxKubeResourceName  = 253
	maxNodeNameInCluster = maxKubeResourceName - len(nodeLeasePrefix)
)

func (o *MembersOptions) defaults() {
	if o.RenewEvery <= 0 {
		o.RenewEvery = DefaultRenewEvery
	}
	if o.Duration <= 0 {
		o.Duration = DefaultLeaseFor
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// checkMemberID: a member id is a DNS label (a pod name is), as it names
// a Lease.
func checkMemberID(id string) error {
	if id == "" || len(id) > maxMemberID || id[0] == '-' || id[len(id)-1] == '-' {
		return fmt.Errorf("member id %q: want 1 to %d lower-case letters, digits or '-'", id, maxMemberID)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("member id %q: want 1 to %d lower-case letters, digits or '-'", id, maxMemberID)
		}
	}
	return nil
}

// renewLoop calls renew now and every every until ctx ends, logging
// (once per run of failures) what fails.
func renewLoop(ctx context.Context, every time.Duration, log *slog.Logger, what string, renew func(context.Context) error) {
	failing := false
	// A renewal may take longer than the interval (a first connection,
	// a busy API server), never so long that it outlives a lease.
	timeout := max(every, renewTimeout)
	for {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		err := renew(rctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			log.Warn("renew "+what, "err", err)
			failing = true
		case err == nil && failing:
			log.Info("renewed " + what + " again")
			failing = false
		}
		if !Sleep(ctx, every) {
			return
		}
	}
}
