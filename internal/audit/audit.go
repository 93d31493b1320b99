// Package audit is the append-only, hash-chained log of what happened in a
// sandbox: every event carries the SHA-256 of the one before it, so
// changing, dropping or reordering any stored event breaks the chain from
// that event on, and Verify names the first one that does not fit.
//
// The package knows events and chains; storing them is the store's, and
// deciding what to record is the sandbox service's.
package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Event types, and the fields of each one's data. Output pieces carry
// "bytes" (the length before encoding), "data" (UTF-8 text, or base64
// with "encoding": "base64" when the piece is not valid UTF-8); secret
// values are replaced with "[secret:NAME]" before anything is recorded.
const (
	SandboxCreated   = "sandbox.created"     // template, limits, timeout_s, metadata, network
	SandboxExpired   = "sandbox.expired"     // reason: timeout | idle
	SandboxDestroyed = "sandbox.destroyed"   // reason
	SandboxFailed    = "sandbox.failed"      // reason
	SandboxPaused    = "sandbox.paused"      // reason: request | idle
	SandboxResumed   = "sandbox.resumed"     // reason: request | auto, paused_ms
	SnapshotCreated  = "snapshot.created"    // name, size_bytes, duration_ms
	SandboxForked    = "sandbox.forked"      // sandboxes, snapshot
	APIRequest       = "api.request"         // method, route, status, duration_ms
	ExecStarted      = "exec.started"        // exec_id, argv | command, cwd, env (names only), background, pid, session_id
	ExecOutput       = "exec.output"         // exec_id, stream (stdout | stderr), bytes, data, encoding
	ExecExited       = "exec.exited"         // exec_id, exit_code, signal, timed_out, oom_killed, duration_ms, session_id
	SessionCreated   = "session.created"     // session_id, mode, shell, cols, rows
	SessionInput     = "session.input"       // session_id, bytes, data, encoding
	SessionOutput    = "session.output"      // session_id, bytes, data, encoding
	SessionResized   = "session.resized"     // session_id, cols, rows
	SessionEnded     = "session.ended"       // session_id, exit_code, signal
	FileWritten      = "file.written"        // path, size, sha256
	FileRead         = "file.read"           // path, size, sha256
	NetConnection    = "net.connection"      // the egress proxy's event
	PortConnection   = "port.connection"     // port, bytes_in, bytes_out, duration_ms, cut, reason
	SecretInjected   = "secret.injected"     // name, host
	SecretMisdirect  = "secret.misdirected"  // name, host
	ModelUsage       = "model.usage"         // api, model, host, status, streamed, duration_ms, input/cached_input/output/reasoning_tokens (null: unread), cost_usd
	ModelRefused     = "model.refused"       // host, refused: a model call answered 429, its budget spent
	OutputCapped     = "audit.output_capped" // limit_bytes
	TaskStarted      = "task.started"        // task_id, harness
	TaskFinished     = "task.finished"       // task_id, harness, state, reason, exit_code, input_tokens, output_tokens
	// An approval (package approvals): the approval as the API shows it;
	// the actor of approval.decided is the key that decided ("system" for
	// a timeout), its reason why.
	ApprovalRequested = "approval.requested"
	ApprovalDecided   = "approval.decided"
)

// ActorSystem is the actor of events no API call caused (expiry, the
// reaper, the egress proxy).
const ActorSystem = "system"

// Event is one entry of a sandbox's log.
type Event struct {
	Seq     int64           `json:"seq"` // 1, 2, ... per sandbox
	Time    time.Time       `json:"time"`
	Sandbox string          `json:"sandbox"`
	Tenant  string          `json:"tenant"`
	Actor   string          `json:"actor"` // API key id, sandbox token id, or "system"
	Type    string          `json:"type"`
	Data    json.RawMessage `json:"data"`
	Prev    string          `json:"prev"` // hash of event Seq-1; "" for the first
	Hash    string          `json:"hash"` // hash of this event (all fields above)
}

// hashed is the part of an event its hash covers, in a fixed order.
type hashed struct {
	Seq     int64           `json:"seq"`
	Time    string          `json:"time"`
	Sandbox string          `json:"sandbox"`
	Tenant  string          `json:"tenant"`
	Actor   string          `json:"actor"`
	Type    string          `json:"type"`
	Data    json.RawMessage `json:"data"`
	Prev    string          `json:"prev"`
}

// Sum returns the hash of e: SHA-256 over a canonical JSON encoding of
// every field but Hash (times in UTC, RFC 3339 with nanoseconds; Data
// compacted).
func Sum(e Event) (string, error) {
	data := []byte("null")
	if len(e.Data) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, e.Data); err != nil {
			return "", fmt.Errorf("audit: event %d: data is not JSON: %v", e.Seq, err)
		}
		data = buf.Bytes()
	}
	b, err := json.Marshal(hashed{e.Seq, e.Time.UTC().Format(time.RFC3339Nano), e.Sandbox, e.Tenant, e.Actor, e.Type, data, e.Prev})
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// Link makes e the event after prev (nil for the first): its Seq, Prev
// and Hash. Time is cut to microseconds so that it survives storage.
func Link(prev *Event, e *Event) error {
	e.Seq, e.Prev = 1, ""
	if prev != nil {
		e.Seq, e.Prev = prev.Seq+1, prev.Hash
	}
	e.Time = e.Time.UTC().Truncate(time.Microsecond)
	if len(e.Data) == 0 {
		e.Data = json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, e.Data); err != nil {
		return fmt.Errorf("audit: %s data is not JSON: %v", e.Type, err)
	}
	e.Data = buf.Bytes()
	h, err := Sum(*e)
	if err != nil {
		return err
	}
	e.Hash = h
	return nil
}

// Result is what Verify found.
type Result struct {
	OK     bool  `json:"ok"`
	Events int64 `json:"events"`
	// FirstBadSeq is the position (1-based) of the first event that does
	// not follow from the ones before it: a changed, missing, extra or
	// reordered event. 0 when OK.
	FirstBadSeq int64  `json:"first_bad_seq,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// Verifier checks a log one event at a time, in stored order.
type Verifier struct {
	n    int64
	prev string
	res  Result
}

// Add checks the next event. Once one is bad, the rest are only counted.
func (v *Verifier) Add(e Event) {
	v.n++
	if v.res.FirstBadSeq != 0 {
		return
	}
	bad := func(format string, args ...any) {
		v.res.FirstBadSeq, v.res.Reason = v.n, fmt.Sprintf("event %d: ", v.n)+fmt.Sprintf(format, args...)
	}
	switch h, err := Sum(e); {
	case e.Seq != v.n:
		bad("sequence number is %d", e.Seq)
	case e.Prev != v.prev:
		bad("does not follow the event before it (prev %.12s, want %.12s)", e.Prev, v.prev)
	case err != nil:
		bad("%v", err)
	case h != e.Hash:
		bad("content does not match its hash")
	}
	v.prev = e.Hash
}

// Head checks that the log ends where the store says its newest event
// is: a log cut short at its end is otherwise a valid chain.
func (v *Verifier) Head(seq int64, hash string) {
	if v.res.FirstBadSeq != 0 || seq == v.n && hash == v.prev {
		return
	}
	switch {
	case seq > v.n:
		v.res.FirstBadSeq = v.n + 1
		v.res.Reason = fmt.Sprintf("event %d: missing; the log held events up to %d", v.n+1, seq)
	default:
		v.res.FirstBadSeq = min(seq, v.n)
		if v.res.FirstBadSeq == 0 {
			v.res.FirstBadSeq = 1
		}
		v.res.Reason = fmt.Sprintf("event %d: not the newest event recorded", v.res.FirstBadSeq)
	}
}

// Result says whether every event added so far fits the chain.
func (v *Verifier) Result() Result {
	r := v.res
	r.Events = v.n
	r.OK = r.FirstBadSeq == 0
	return r
}

// Verify checks a whole log.
func Verify(events []Event) Result {
	var v Verifier
	for _, e := range events {
		v.Add(e)
	}
	return v.Result()
}
