package sqlite

import (
	"context"
	"fmt"
	"os"
	"time"
)

// tuning is how the store checkpoints its WAL; tests shrink it.
type tuning struct {
	// checkpointEvery is how often the WAL is copied back into the
	// database when something was written.
	checkpointEvery time.Duration
	// walLimit is the WAL file's size past which the checkpointer
	// truncates it (see checkpointLoop).
	walLimit int64
}

var defaultTuning = tuning{checkpointEvery: time.Second, walLimit: 64 << 20}

// walTruncateWait bounds how long a truncating checkpoint waits for
// readers that still use the WAL, with this process's writers held.
const walTruncateWait = 250 * time.Millisecond

// checkpointLoop checkpoints the WAL after writes, passively: it never
// waits for readers or blocks writers. That alone does not bound the WAL:
// SQLite starts the log over only when a checkpoint has copied all of it
// back and no reader uses it, and under writes that never pause a passive
// checkpoint never catches up (writers commit while it copies), so the
// file grew by everything written (three sandboxes printing grew the
// database and its WAL by ~16 MB/s). Past
// walLimit the checkpointer therefore holds this process's writers, copies
// the rest and truncates the file (TRUNCATE mode), waiting up to
// walTruncateWait for readers.
func (s *Store) checkpointLoop() {
	defer close(s.ckptDone)
	t := time.NewTicker(s.tune.checkpointEvery)
	defer t.Stop()
	var seen int64
	for {
		select {
		case <-s.stopCkpt:
			return
		case <-t.C:
		}
		if n := s.writes.Load(); n != seen {
			seen = n
			if fi, err := os.Stat(s.wal); err == nil && fi.Size() > s.tune.walLimit {
				s.truncateWAL()
				continue
			}
			s.db.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`)
		}
	}
}

// truncateWAL copies what is left of the WAL into the database and
// truncates it, holding this process's writers (other processes' wait in
// their busy handler). A checkpoint that readers keep from finishing
// gives up after walTruncateWait; the next tick tries again.
func (s *Store) truncateWAL() {
	ctx := context.Background()
	// The write lock first, then a connection, as every writer takes them.
	s.wmu.Lock()
	defer s.wmu.Unlock()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, walTruncateWait.Milliseconds()))
	conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, busyTimeout.Milliseconds()))
}
