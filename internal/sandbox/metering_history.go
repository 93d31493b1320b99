package sandbox

import (
	"context"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
)

// HistoryWindow is how far back the readings of a running sandbox are
// kept, so that a chart opened now starts with the last minutes instead
// of empty.
const HistoryWindow = 5 * time.Minute

// minSampleGap drops a reading that comes this soon after the one kept
// last (two pages polling the same sandbox), which bounds a sandbox's
// ring at maxSamples however often it is read.
const minSampleGap = time.Second

const maxSamples = int(HistoryWindow/minSampleGap) + 1

// Sample is one reading of a running sandbox's cgroup: its CPU time so
// far (a rate is the difference of two samples over their time apart)
// and the memory it had in use.
type Sample struct {
	Time        time.Time `json:"time"`
	CPUSeconds  float64   `json:"cpu_seconds"`
	MemoryBytes int64     `json:"memory_bytes"`
}

// MetricsHistory is GET /v1/sandboxes/{id}/metrics/history: the readings
// of the last HistoryWindow, oldest first. IntervalS is how often the
// meter reads every running sandbox by itself; readings made for a caller
// in between (the metrics route) are kept too.
type MetricsHistory struct {
	SandboxID string   `json:"sandbox_id"`
	IntervalS float64  `json:"interval_s"`
	Samples   []Sample `json:"samples"`
}

// sample is a Sample as the ring keeps it: 24 bytes, not a time.Time's 40.
type sample struct {
	at  int64 // unix nanoseconds
	cpu float64
	mem int64
}

// sampleRing keeps the newest maxSamples readings of one sandbox in memory
// only: they are for charts, not for metering, which the store keeps. The
// meter's lock guards it; it grows to its size as readings come.
type sampleRing struct {
	buf  []sample
	head int // the oldest once buf is full
}

// add keeps a reading taken at (CPU time only grows: a reading that
// raced an older one keeps the larger value).
func (r *sampleRing) add(x sample) {
	if n := len(r.buf); n > 0 {
		last := r.buf[(r.head+n-1)%n]
		if x.at-last.at < int64(minSampleGap) {
			return
		}
		x.cpu = max(x.cpu, last.cpu)
	}
	if len(r.buf) < maxSamples {
		r.buf = append(r.buf, x)
		return
	}
	r.buf[r.head] = x
	r.head = (r.head + 1) % len(r.buf)
}

// since returns the readings taken at or after from, oldest first.
func (r *sampleRing) since(from int64) []Sample {
	out := []Sample{}
	n := len(r.buf)
	for i := range n {
		x := r.buf[(r.head+i)%n]
		if x.at >= from {
			out = append(out, Sample{Time: time.Unix(0, x.at).UTC(), CPUSeconds: x.cpu, MemoryBytes: x.mem})
		}
	}
	return out
}

// SandboxMetricsHistory returns a running sandbox's recent readings; an
// ended sandbox, or one the daemon has not read since it started, has
// none.
func (s *Service) SandboxMetricsHistory(ctx context.Context, c Caller, id string) (MetricsHistory, error) {
	rec, err := s.resolve(ctx, c, id)
	if err != nil {
		return MetricsHistory{}, err
	}
	h := MetricsHistory{SandboxID: rec.ID, IntervalS: UsageFlushEvery.Seconds(), Samples: []Sample{}}
	if rec.State != sandboxrec.Running {
		return h, nil
	}
	from := s.now().Add(-HistoryWindow).UnixNano()
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	if r := s.meter.runs[id]; r != nil {
		h.Samples = r.hist.since(from)
	}
	return h, nil
}
