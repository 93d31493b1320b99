package cluster

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Elector elects one leader among the processes that run it with the
// same lock. Run campaigns until its context ends, leading whenever it
// holds the lock, and steps down (releasing the lock) when it returns.
//
// Changes carries each change of IsLeader (true: this process now leads;
// false: it no longer does) and is closed when Run returns. It holds only
// the latest change: a reader that falls behind sees the state as it is
// now, not every flip on the way. Work that only the leader may do starts
// on true and stops on false, and must also stop when the channel
// closes.
type Elector interface {
	Run(ctx context.Context)
	IsLeader() bool
	// Leader is the identity of the current leader, "" when none is
	// known.
	Leader() string
	Changes() <-chan bool
}

// ElectorOptions tune an elector; zero fields take the defaults.
type ElectorOptions struct {
	// LeaseDuration is how long a lost leader keeps its Lease before
	// another may take it (Lease elector; default 15 s).
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew before
	// it steps down (Lease elector; default 10 s).
	RenewDeadline time.Duration
	// RetryPeriod is how often a follower tries to take the lock, and how
	// often a PostgreSQL leader checks its session (default 2 s).
	RetryPeriod time.Duration
	Logger      *slog.Logger
}

// Defaults of ElectorOptions: a dead leader is replaced within about
// LeaseDuration (Lease), or as soon as its database session ends.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

func (o *ElectorOptions) defaults() {
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline <= 0 {
		o.RenewDeadline = DefaultRenewDeadline
	}
	if o.RetryPeriod <= 0 {
		o.RetryPeriod = DefaultRetryPeriod
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// leadership is the state both electors share: whether this process
// leads, who does, and the channel of changes.
type leadership struct {
	mu      sync.Mutex
	leading bool
	leader  string
	changes chan bool
	closed  bool
}

func newLeadership() *leadership { return &leadership{changes: make(chan bool, 1)} }

func (l *leadership) IsLeader() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leading
}

func (l *leadership) Leader() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leader
}

func (l *leadership) Changes() <-chan bool { return l.changes }

func (l *leadership) setLeader(id string) {
	l.mu.Lock()
	l.leader = id
	l.mu.Unlock()
}

// set records whether this process leads and, when that changed, puts
// it on the channel in place of a change not read yet.
func (l *leadership) set(leading bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leading == leading || l.closed {
		return
	}
	l.leading = leading
	select {
	case <-l.changes:
	default:
	}
	l.changes <- leading
}

// close ends the channel once Run has stepped down.
func (l *leadership) close() {
	l.set(false)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.changes)
	}
}
