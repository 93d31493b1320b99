package approvals

import "time"

// Record is an approval as the stores keep it (store.Store and Store
// here): what is asked is opaque JSON to them (Request), whose kinds and
// fields are this package's.
type Record struct {
	ID          string
	TenantID    string
	SandboxID   string
	Task        string // the sandbox's task, "" if none
	Kind        string
	Request     string // what is asked, as JSON
	State       string // Pending until decided or timed out
	RequestedAt time.Time
	Deadline    time.Time
	DecidedAt   time.Time // zero while pending
	DecidedBy   string    // the API key that decided, "" for a timeout
	Reason      string
	Remember    string
}
