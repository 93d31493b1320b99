package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// Deferred sandbox writes (UpdateSandboxSoon): the record changes in the
// cache at once and reaches the database within deferFor, off the
// request's path. Whatever reads the sandboxes table from the database
// (lists, counts, a lookup the cache misses) writes what is pending
// first, as does every write of the same record, so no reader through
// this store ever sees the older row and no later write is overtaken.
type deferredSandboxes struct {
	mu      sync.Mutex
	pending map[string]sandboxrec.Sandbox
	timer   *time.Timer
	closed  bool // by Close, after its last flush
	// flushing counts flushes that took pending records and have not
	// written them yet: a reader that finds nothing pending must still
	// wait for those.
	flushing int
}

// flushTaken, when set (by tests), runs after a flush takes the pending
// records and before it writes them.
var flushTaken func()

// deferFor is how long a deferred write may wait: long enough to leave the
// request that made it, short enough that a crash loses little.
const deferFor = 2 * time.Millisecond

// UpdateSandboxSoon is UpdateSandbox for a change a crash may lose
// because a restart reconciles it with the runtime anyway (see store.Store).
// The record must exist.
func (s *Store) UpdateSandboxSoon(ctx context.Context, sb sandboxrec.Sandbox) error {
	if _, err := s.GetSandbox(ctx, sb.ID); err != nil {
		return fmt.Errorf("update sandbox %s: %w", sb.ID, err)
	}
	sb = stored(sb)
	d := &s.deferred
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return fmt.Errorf("update sandbox %s: the store is closed", sb.ID)
	}
	if d.pending == nil {
		d.pending = map[string]sandboxrec.Sandbox{}
	}
	d.pending[sb.ID] = sb
	if d.timer == nil {
		d.timer = time.AfterFunc(deferFor, func() { s.flushSandboxes(context.Background()) })
	} else if len(d.pending) == 1 {
		d.timer.Reset(deferFor)
	}
	// Under d.mu: a flush that takes the pending write after this point
	// also finds the cache updated, so the two never disagree for long.
	s.sandboxes.wrote(sb.ID, sb, true)
	d.mu.Unlock()
	return nil
}

// flushSandboxes writes the pending records. It holds the write lock
// while it takes them, so a write of the same record cannot slip between
// taking and writing.
func (s *Store) flushSandboxes(ctx context.Context) error {
	d := &s.deferred
	d.mu.Lock()
	idle := len(d.pending) == 0 && d.flushing == 0
	d.mu.Unlock()
	if idle {
		return nil
	}
	// A flush under way holds the write lock until its records are
	// written: taking it waits for them.
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.flushSandboxesLocked(ctx)
}

// flushSandboxesLocked is flushSandboxes with the write lock held.
func (s *Store) flushSandboxesLocked(ctx context.Context) error {
	d := &s.deferred
	d.mu.Lock()
	pending := d.pending
	d.pending = nil
	d.flushing++
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.flushing--
		d.mu.Unlock()
	}()
	if flushTaken != nil && len(pending) > 0 {
		flushTaken()
	}
	var first error
	for _, sb := range pending {
		err := s.updateSandboxLocked(ctx, sb)
		if err == nil || errors.Is(err, store.ErrNotFound) {
			// The cache holds sb already, or a newer record of it that
			// UpdateSandboxSoon put there since, pending now: it must not
			// go back to sb meanwhile.
			d.mu.Lock()
			if _, newer := d.pending[sb.ID]; !newer {
				s.sandboxes.wrote(sb.ID, sb, err == nil)
			}
			d.mu.Unlock()
			continue
		}
		if first == nil {
			first = fmt.Errorf("deferred update of sandbox %s: %w", sb.ID, err)
		}
		// A failed write (the database busy with another process, say)
		// is tried again, unless a newer one is pending by now; the cache
		// already holds the record.
		d.mu.Lock()
		if d.pending == nil {
			d.pending = map[string]sandboxrec.Sandbox{}
		}
		if _, newer := d.pending[sb.ID]; !newer && !d.closed {
			d.pending[sb.ID] = sb
			d.timer.Reset(retryDeferred)
		}
		d.mu.Unlock()
	}
	return first
}

// retryDeferred is how long a failed deferred write waits to be tried
// again.
const retryDeferred = 100 * time.Millisecond

// closeDeferred writes what is pending, for the last time.
func (s *Store) closeDeferred() {
	s.flushSandboxes(context.Background())
	d := &s.deferred
	d.mu.Lock()
	d.closed = true
	if d.timer != nil {
		d.timer.Stop()
	}
	d.mu.Unlock()
}

// dropPending forgets a pending write of id: the caller is about to write
// a newer record, with the write lock held.
func (s *Store) dropPending(id string) {
	d := &s.deferred
	d.mu.Lock()
	delete(d.pending, id)
	d.mu.Unlock()
}
