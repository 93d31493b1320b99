// Package egresshost runs the egress proxy of a node's sandboxes on the
// node itself: a sandbox's traffic leaves from the host it runs on, not
// through the control plane.
//
// The control plane tells a node what each sandbox's proxy serves with
// (its policy, the values of its bound secrets, the budget gate's word) in
// one call that attaches or updates it, and takes it away when the
// sandbox ends. The node writes every event its proxies log to a journal
// in its data dir before anything else sees it; the control plane follows
// that journal (GET /node/v1/egress/events, a long poll) and acknowledges
// what it has stored by asking for what comes after, so an event is kept
// by the node until the control plane has it, across either side's
// restart. Questions the proxies put to a person (a policy's ask) go out
// in the same answer and come back as a call (POST
// /node/v1/egress/asks/{id}).
//
// A secret's value reaches the node only inside the mutually
// authenticated TLS connection from its control plane, only for a sandbox
// bound to it and only while that sandbox is attached, and is held in
// memory: the journal has the events, which name secrets, never their
// values. A node that restarts has none until the control plane attaches
// its sandboxes again.
package egresshost

import (
	"time"

	"github.com/airlockhq/airlock/internal/egress"
)

// Spec is what a sandbox's proxy on a node serves with (PUT
// /node/v1/sandboxes/{id}/egress). Putting it again replaces it: new
// connections and requests follow the new policy, secrets and gate at
// once; tunnels already open stay open.
type Spec struct {
	Tenant  string        `json:"tenant"`
	Policy  egress.Policy `json:"policy"`
	Secrets *Secrets      `json:"secrets,omitempty"`
	// Gate, when set, refuses every model API call with this reason: the
	// sandbox's budget is spent (egress.Sandbox.SetModelGate).
	Gate string `json:"gate,omitempty"`
	// Budget says the sandbox has a budget: each model API call waits
	// until the control plane has acknowledged the usage of the
	// sandbox's previous ones (up to BudgetWait; past it the call is
	// refused), so Gate is its word on all of them: the control plane
	// puts Gate before it acknowledges.
	Budget bool `json:"budget,omitempty"`
}

// BudgetWait bounds how long a model call of a sandbox with a budget
// waits for the control plane to count the calls before it.
const BudgetWait = 10 * time.Second

// PutReply is the answer to a Spec put.
type PutReply struct {
	// Boot names the node process that serves it: one that has another
	// lost it (Batch.Boot).
	Boot string `json:"boot"`
}

// Secrets are a sandbox's CA and the current values of its bound secrets.
type Secrets struct {
	CACert   []byte    `json:"ca_cert"` // PEM
	CAKey    []byte    `json:"ca_key"`  // PKCS#8 DER
	Bindings []Binding `json:"bindings"`
}

// Binding is egress.Binding on the wire.
type Binding struct {
	Name        string   `json:"name"`
	Placeholder string   `json:"placeholder"`
	Value       []byte   `json:"value"`
	Hosts       []string `json:"hosts"`
	Header      string   `json:"header,omitempty"`
	Format      string   `json:"format,omitempty"`
	Body        bool     `json:"body,omitempty"`
}

// NewSecrets is ca and bindings on the wire.
func NewSecrets(ca *egress.CA, bindings []egress.Binding) *Secrets {
	out := &Secrets{CACert: ca.CertPEM(), CAKey: ca.KeyPKCS8(), Bindings: make([]Binding, len(bindings))}
	for i, b := range bindings {
		out.Bindings[i] = Binding{Name: b.Name, Placeholder: b.Placeholder, Value: b.Value, Hosts: b.Hosts, Header: b.Header, Format: b.Format, Body: b.Body}
	}
	return out
}

// open is s as the proxy takes it.
func (s *Secrets) open() (*egress.CA, []egress.Binding, error) {
	ca, err := egress.LoadCA(s.CACert, s.CAKey)
	if err != nil {
		return nil, nil, err
	}
	out := make([]egress.Binding, len(s.Bindings))
	for i, b := range s.Bindings {
		out[i] = egress.Binding{Name: b.Name, Placeholder: b.Placeholder, Value: b.Value, Hosts: b.Hosts, Header: b.Header, Format: b.Format, Body: b.Body}
	}
	return ca, out, nil
}

// Batch is an answer of GET
// /node/v1/egress/events?after=N&asks=V&boot=B&wait_ms=D: the journal's
// events after N (N acknowledges everything up to it), and the questions
// waiting for a person now. It waits up to D for something new: an
// event, questions other than as of version V, or a process other than
// B.
type Batch struct {
	// Boot names this node process: a new one has no attachment until
	// the control plane puts them again.
	Boot   string   `json:"boot"`
	Events []Record `json:"events"`
	// Asks are every question open now, as of version AskVersion; the
	// poll returns at once when its asks=V differs.
	Asks       []Ask `json:"asks"`
	AskVersion int64 `json:"ask_version"`
}

// Record is an event of the journal with its place in it.
type Record struct {
	Seq   int64        `json:"seq"`
	Event egress.Event `json:"event"`
}

// Ask is a question a node's proxy waits on.
type Ask struct {
	ID      string            `json:"id"`
	Request egress.AskRequest `json:"request"`
}

// Answer is the decision on an Ask (POST /node/v1/egress/asks/{id}).
type Answer struct {
	Allow  bool   `json:"allow"`
	Reason string `json:"reason"`
}

// MaxWait bounds how long an events call waits for something new.
const MaxWait = 30 * time.Second

// maxBatch bounds the events of one answer.
const maxBatch = 1000
