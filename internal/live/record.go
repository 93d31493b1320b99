package live

import (
	"context"
	"io"

	"github.com/airlockhq/airlock/internal/runtime"
)

// What live work records goes into its sandbox's audit log through these:
// the log, its event types and what they carry are the caller's
// (internal/sandbox); live only says what happened, when.

// Output records one stream of output: a command's stdout or stderr, a
// terminal's output, what a client types.
type Output interface {
	// Write records p, which is not read from a job.
	io.Writer
	// WriteEnd records p, which ends at offset end of a job's output: a
	// daemon that follows the job again after a restart knows from it
	// what is recorded.
	WriteEnd(p []byte, end int64)
	// Flush records what is held, before whatever is recorded next.
	Flush()
}

// CommandRecorder records one command whose start its caller recorded: its
// output and its end.
type CommandRecorder interface {
	// ID is the exec id its start was recorded with.
	ID() string
	// Actor is who its events are recorded as; its job keeps it, so that
	// a daemon that adopts the job records as the same actor.
	Actor() string
	Stdout() Output
	Stderr() Output
	// Exited records its end: its status, or err when it broke off.
	Exited(res ExecResult, err error)
}

// SessionRecorder records a session's shell: its start, what its
// terminal shows (Output) and its end.
type SessionRecorder interface {
	Output
	// Actor is who the session's events are recorded as (see CommandRecorder).
	Actor() string
	Created(info SessionInfo)
	// Ended records the shell's exit status, or err when it was lost.
	Ended(st runtime.ExitStatus, err error)
}

// TerminalRecorder records what one client attached to a session's
// terminal types (Output) and its resizes.
type TerminalRecorder interface {
	Output
	Resized(cols, rows uint16)
}

// Recorder records one actor's live work in one sandbox.
type Recorder interface {
	// Session is the recorder of session sid.
	Session(sid string) SessionRecorder
	// Command is the recorder of the command with exec id execID, whose
	// start an earlier daemon recorded.
	Command(execID string) CommandRecorder
}

// Log is a sandbox's audit log as a daemon that adopts its jobs finds it.
type Log interface {
	// As records as actor, the one a job's meta names.
	As(actor string) Recorder
	// CommandOutput is, per exec id, the offset in the command's output
	// after what the log holds; SessionOutput the same per session id.
	CommandOutput(ctx context.Context) map[string]int64
	SessionOutput(ctx context.Context) map[string]int64
}
