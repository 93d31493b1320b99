package batch

import (
	"log/slog"
	"time"
)

// RetryFor is how long a batch writer tries a batch again while its store
// is busy or away (a PostgreSQL restarting takes seconds): a batch lost is
// records lost that callers were told are kept.
const RetryFor = time.Minute

// Retry calls write until it succeeds, done says an error is final (a
// conflict: the batch is there already), or RetryFor has passed, backing
// off from 100 ms to 2 s, and returns its last error. Writers queued
// behind the batch wait meanwhile.
func Retry(what string, log *slog.Logger, write func() error, done func(error) bool) error {
	wait := 100 * time.Millisecond
	for start := time.Now(); ; {
		err := write()
		if err == nil || (done != nil && done(err)) || time.Since(start) > RetryFor {
			return err
		}
		if wait == 100*time.Millisecond {
			log.Warn(what+": retrying", "err", err)
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}
