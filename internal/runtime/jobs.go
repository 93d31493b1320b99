package runtime

import (
	"context"
	"encoding/json"
	"io"
	"time"
)

// JobRunner is implemented by sandboxes whose agent runs jobs: processes
// that outlive the host's connection to it, and so a restart of the
// daemon, with their newest output and their exit status kept inside the
// sandbox until the job is forgotten. A sandbox whose agent predates jobs
// answers ErrUnsupported.
type JobRunner interface {
	// Spawn starts req as a job. req's streams are not used. A job on a
	// terminal (req.TTY) and opts.CloseStdin need a newer agent than
	// other jobs: ErrUnsupported where it is older.
	Spawn(ctx context.Context, req ExecRequest, opts JobOptions) (JobInfo, error)
	// Attach sends job pid's output from offset on to out and, as mode
	// says, what it writes next until it ends. Cancelling ctx detaches.
	Attach(ctx context.Context, pid int, offset int64, mode AttachMode, out func(JobOutput) error) (JobEnd, error)
	// Input writes r to the job's stdin, then closes it with closeStdin.
	Input(ctx context.Context, pid int, r io.Reader, closeStdin bool) error
	// OpenInput holds the job's stdin open for writes (and its terminal
	// for resizes) until Close or the job's end; meanwhile it is the job's
	// only input. Cancelling ctx closes it.
	OpenInput(ctx context.Context, pid int) (JobStdin, error)
	// Jobs lists the jobs kept, oldest first.
	Jobs(ctx context.Context) ([]JobInfo, error)
	// Forget drops an ended job.
	Forget(ctx context.Context, pid int) error
}

// JobOptions are a job's own settings.
type JobOptions struct {
	Buffer     int64           // output kept, at most (0: the agent's default)
	Meta       json.RawMessage // kept with the job for the host (JSON, at most 4 KiB)
	CloseStdin bool            // its stdin is closed at once (nothing to read)
}

// AttachMode is how an attach reads a job's output.
type AttachMode int

const (
	// AttachRead sends what the job has kept, then its end or JobInfo.
	AttachRead AttachMode = iota
	// AttachFollow goes on with what it writes next, until it ends.
	AttachFollow
	// AttachHold follows, and while attached the job drops none of its
	// output not yet read: it waits for the reader, as on a full pipe. A
	// reader that cannot keep up slows the process instead of losing its
	// output. Needs a newer agent (ErrUnsupported).
	AttachHold
)

// AgentVersioner is implemented by sandboxes that can say which protocol
// version their agent speaks (it may be older than the host's, for a
// sandbox started by an older binary).
type AgentVersioner interface {
	AgentVersion(ctx context.Context) (int, error)
}

// JobStdin is a job's stdin held open. A write fails once the job has
// ended.
type JobStdin interface {
	io.Writer
	Resize(size TTYSize) error
	Close() error
}

// JobInfo describes a job. Offsets count the bytes of all its streams
// together, from its first.
type JobInfo struct {
	Pid     int
	Started time.Time
	TTY     bool
	Running bool
	Exit    *ExitStatus // once it has ended, unless Err says why there is none
	Err     string
	Ended   time.Time
	Output  int64 // the offset after the newest byte
	Dropped int64 // the offset of the oldest byte kept
	Meta    json.RawMessage
}

// JobOutput is a piece of a job's output, or, with Dropped set, the news
// that the Dropped bytes before Offset are no longer kept.
type JobOutput struct {
	Stream  string // "stdout" or "stderr"
	Offset  int64
	Data    []byte // valid until the callback returns
	Dropped int64
}

// JobEnd is how an attach ended: with the job's exit (Exit, or Err when
// its status could not be had), or, for a running job not followed, with
// its JobInfo. Next is the offset after the output received.
type JobEnd struct {
	Next int64
	Exit *ExitStatus
	Info *JobInfo
}
