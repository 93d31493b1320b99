package egress

import (
	"sync"
	"time"
)

// Event is one connection or request through the proxy, allowed or denied.
type Event struct {
	Seq        int64     `json:"seq"`
	Time       time.Time `json:"time"`
	SandboxID  string    `json:"sandbox_id"`
	TenantID   string    `json:"tenant_id"`
	Protocol   string    `json:"protocol"` // "http", "https" (intercepted), "connect", "socks5"
	Host       string    `json:"host"`
	Port       int       `json:"port"`
	Addr       string    `json:"addr,omitempty"` // the address dialed, if any
	Decision   string    `json:"decision"`       // "allowed" or "denied"
	Rule       string    `json:"rule,omitempty"` // the entry that decided, as written
	Reason     string    `json:"reason,omitempty"`
	Status     int       `json:"status,omitempty"` // HTTP status returned, for http
	BytesUp    int64     `json:"bytes_up"`         // from the sandbox
	BytesDown  int64     `json:"bytes_down"`       // to the sandbox
	DurationMS float64   `json:"duration_ms"`

	// UpstreamError is set when the policy allowed the connection and the
	// upstream side failed: one of UpstreamDNS, UpstreamRefused,
	// UpstreamUnreachable, UpstreamTimeout, UpstreamTLS, UpstreamReset,
	// UpstreamOther; Reason says what failed. Decision stays "allowed".
	UpstreamError string `json:"upstream_error,omitempty"`

	// Cut says the connection was open when the proxy stopped carrying
	// it: the daemon stopped (Reason ReasonCut), or went away without a
	// word (found at the next start: ReasonCutCrash).
	Cut bool `json:"cut,omitempty"`

	// Kind is "" for a connection or request, else a secret event
	// (KindSecretInjected, KindSecretMisdirected) about binding Secret,
	// or a model API call's: its usage (KindModelUsage, with Usage; one
	// per answered call, besides the request's own event), or the
	// request's own event when the budget gate refused it
	// (KindModelBudget).
	Kind   string `json:"kind,omitempty"`
	Secret string `json:"secret,omitempty"` // a binding's name, never its value

	Usage *ModelUsage `json:"usage,omitempty"` // with KindModelUsage

	// Approval is set when the policy's ask held the connection for a
	// person: ApprovalAllowed (Decision "allowed", Reason "approved: ..."
	// unless something failed later), or why it was refused:
	// ApprovalDenied, ApprovalTimedOut, ApprovalUnavailable (no approvals
	// service, or it failed), ApprovalAbandoned (the client hung up, or
	// the sandbox closed, before anyone decided).
	Approval string `json:"approval,omitempty"`
}

// Outcomes of a connection held for a person (Event.Approval).
const (
	ApprovalAllowed     = "allowed"
	ApprovalDenied      = "denied"
	ApprovalTimedOut    = "timed_out"
	ApprovalUnavailable = "unavailable"
	ApprovalAbandoned   = "abandoned"
)

// Reasons of a cut connection.
const (
	ReasonCut      = "cut: the proxy stopped (the daemon stopped, or the sandbox ended)"
	ReasonCutCrash = "cut: the daemon went away while it was open (found at the next start)"
)

// Decisions.
const (
	Allowed = "allowed"
	Denied  = "denied"
)

// eventLog keeps the newest events of one sandbox in a ring, numbered
// from 1; the oldest are dropped first.
type eventLog struct {
	mu   sync.Mutex
	buf  []Event
	head int   // index of the oldest event once the ring is full
	next int64 // the seq the next event gets
	size int
}

func newEventLog(size int) *eventLog { return &eventLog{next: 1, size: size} }

func (l *eventLog) add(e Event) Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.Seq = l.next
	l.next++
	if l.size <= 0 {
		return e
	}
	if len(l.buf) < l.size {
		l.buf = append(l.buf, e)
	} else {
		l.buf[l.head] = e
		l.head = (l.head + 1) % l.size
	}
	return e
}

// since returns up to limit kept events with a seq above after, oldest
// first (limit <= 0: all).
func (l *eventLog) since(after int64, limit int) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []Event{}
	for i := range l.buf {
		e := l.buf[(l.head+i)%len(l.buf)]
		if e.Seq > after {
			out = append(out, e)
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out
}
