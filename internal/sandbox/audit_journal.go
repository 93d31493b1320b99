package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/store"
)

// An event the API has answered for must survive a kill -9 of the
// daemon, but the audit log writes to the store in batches, a few
// milliseconds behind. Waiting for each batch before answering cost one
// store transaction per call (~0.5 ms on this VM, 1.5 ms of every
// create-exec-delete cycle). Instead each event, as it is linked into its
// chain, is appended to a journal file in the data dir: one write(2) into
// the page cache, which outlives the process. The journal is emptied
// whenever the store has every event it holds; a starting daemon first
// stores what the journal holds that the store lacks (a crash between the
// two), then empties it. A power loss may still take the newest events,
// as it may the database's own newest writes (synchronous=NORMAL).

// auditJournalFile is the journal's name in the data dir.
const auditJournalFile = "audit.journal"

// auditJournal is the file and what is known of its events. Lock order:
// auditLog.mu, then mu; the batcher's writer takes mu alone.
type auditJournal struct {
	f   *os.File
	log *slog.Logger

	mu      sync.Mutex
	queued  int64 // events appended since it was last emptied
	written int64 // of those, in the store
	broken  bool  // a write failed: Durable falls back to syncing
}

// openAuditJournal opens the journal in dir, first storing what it holds
// that st lacks.
func openAuditJournal(ctx context.Context, dir string, st Store, log *slog.Logger) (*auditJournal, error) {
	path := dir + "/" + auditJournalFile
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit journal: %w", err)
	}
	j := &auditJournal{f: f, log: log}
	if err := j.replay(ctx, st); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

// replay stores the journal's events the store lacks (those it has are
// skipped by their sequence number) and empties it.
func (j *auditJournal) replay(ctx context.Context, st Store) error {
	if _, err := j.f.Seek(0, 0); err != nil {
		return fmt.Errorf("audit journal: %w", err)
	}
	var events []audit.Event
	sc := bufio.NewScanner(j.f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var e audit.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// A line cut by the crash: the last one, never answered for.
			j.log.Warn("audit journal: an unreadable line is skipped", "err", err)
			continue
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("audit journal: %w", err)
	}
	stored := 0
	if len(events) > 0 && st.AppendAudit(ctx, events) == nil {
		stored = len(events)
	} else {
		// Some are in the store already: one at a time, in order.
		for _, e := range events {
			err := st.AppendAudit(ctx, []audit.Event{e})
			switch {
			case err == nil:
				stored++
			case !errors.Is(err, store.ErrConflict):
				return fmt.Errorf("audit journal: store event %d of %s: %w", e.Seq, e.Sandbox, err)
			}
		}
	}
	if stored > 0 {
		j.log.Info("audit journal: stored events the daemon before this one had not", "events", stored)
	}
	return j.empty()
}

func (j *auditJournal) empty() error {
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("audit journal: %w", err)
	}
	j.queued, j.written = 0, 0
	return nil
}

// add appends an event as it is queued for the store. auditLog.mu is
// held, so the journal's order is the queue's.
func (j *auditJournal) add(e audit.Event) {
	b, err := json.Marshal(e)
	if err == nil {
		b = append(b, '\n')
		j.mu.Lock()
		_, err = j.f.Write(b)
		if err == nil {
			j.queued++
		}
		j.mu.Unlock()
	}
	if err != nil {
		j.mu.Lock()
		j.broken = true
		j.mu.Unlock()
		j.log.Error("audit journal: append", "sandbox", e.Sandbox, "err", err)
	}
}

// stored counts events whose write to the store is over (the oldest, since
// the queue is written in order; a batch the store refused is as lost as
// before the journal, and said so in the daemon's log), and empties the
// journal once none is left.
func (j *auditJournal) stored(n int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.written += int64(n)
	if j.written >= j.queued {
		if err := j.empty(); err != nil {
			j.broken = true
			j.log.Error("audit journal: empty", "err", err)
		}
	}
}

// durable says every event added so far survives a crash of the process.
func (j *auditJournal) durable() bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return !j.broken
}

func (j *auditJournal) close() error {
	if j == nil {
		return nil
	}
	return j.f.Close()
}
