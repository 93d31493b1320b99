package live

import (
	"time"

	"github.com/airlockhq/airlock/internal/outbuf"
	"github.com/airlockhq/airlock/internal/runtime"
)

// ProcOutputCap bounds the output kept per background process; the oldest
// is dropped first and readers asking for it are told so.
const ProcOutputCap = 4 << 20

// OutputCap bounds each stream of a command's output kept for an answer
// (a non-streaming exec's, a session command's).
const OutputCap = 1 << 20

// ExecResult is how a command ended, and for a non-streaming exec what it
// printed: the JSON answer of an exec, and a process's or shell's exit.
type ExecResult struct {
	// ExecID names the command in the sandbox's audit log (its output's
	// replay: GET /v1/sandboxes/{id}/audit/cast?exec=ID).
	ExecID     string  `json:"exec_id,omitempty"`
	ExitCode   int     `json:"exit_code"`
	Signal     int     `json:"signal"`
	Stdout     string  `json:"stdout"`
	Stderr     string  `json:"stderr"`
	DurationMS float64 `json:"duration_ms"`
	TimedOut   bool    `json:"timed_out"`
	OOMKilled  bool    `json:"oom_killed"`
	Truncated  bool    `json:"truncated"`
}

// ExitResult is the ExecResult of a runtime's exit status.
func ExitResult(st runtime.ExitStatus) ExecResult {
	return ExecResult{
		ExitCode:   st.Code,
		Signal:     st.Signal,
		DurationMS: float64(st.Duration) / float64(time.Millisecond),
		TimedOut:   st.TimedOut,
		OOMKilled:  st.OOMKilled,
	}
}

// ended is how a process whose output a buffer keeps came to its end: its
// exit, or err when it was lost (with its sandbox or session) instead.
type ended struct {
	exit ExecResult
	err  error
	at   time.Time
}

// outBuf is a background process's output or a session's scrollback.
type outBuf = outbuf.Buffer[ended]

func newOutBuf(max int64) *outBuf { return outbuf.New[ended](max) }
