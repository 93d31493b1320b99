package sandbox

import (
	"time"

	"github.com/airlockhq/airlock/internal/outbuf"
)

// ProcOutputCap bounds the output kept per background process; the oldest
// is dropped first and readers asking for it are told so.
const ProcOutputCap = 4 << 20

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
