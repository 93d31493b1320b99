package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/store"
)

// TestWALStaysBoundedUnderConstantWrites: writers that never pause, with
// readers between them, grew the WAL by everything they wrote (passive
// checkpoints never caught up, so SQLite never started the log over);
// the checkpointer now truncates it whenever it passes its bound, so it
// stays within the bound and what is written while one checkpoint runs
// and the next is due (here at ~40 MB/s and 20 ms periods: a few MB).
func TestWALStaysBoundedUnderConstantWrites(t *testing.T) {
	const limit = 2 << 20
	path := filepath.Join(t.TempDir(), "airlock.db")
	s, err := openTuned(path, tuning{checkpointEvery: 20 * time.Millisecond, walLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	payload := make([]byte, 16<<10)
	for i := range payload {
		payload[i] = 'x'
	}
	const perCommit = 8
	// The writers must write many times the bound, or the test proves
	// nothing; slower builds (-race) take longer to get there.
	const enough = 16 * limit
	var written atomic.Int64

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var werr atomic.Value
	fail := func(err error) { werr.CompareAndSwap(nil, err) }
	for w := range 2 {
		sandbox := fmt.Sprint("sb_", w)
		wg.Go(func() {
			batch := make([]store.NetEvent, perCommit)
			for i := range batch {
				batch[i] = store.NetEvent{SandboxID: sandbox, TenantID: "ten_1", Time: t0, Data: payload}
			}
			for n := 1; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := s.AppendNetEvents(ctx, batch); err != nil {
					fail(err)
					return
				}
				written.Add(perCommit * int64(len(payload)))
				// Keep the database itself small: only the WAL is at stake.
				if n%20 == 0 {
					if _, err := s.exec(ctx, `DELETE FROM net_events WHERE sandbox_id = ?`, sandbox); err != nil {
						fail(err)
						return
					}
				}
			}
		})
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.NetEvents(ctx, sandbox, 0, 5); err != nil {
					fail(err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}

	var biggest int64
	deadline := time.Now().Add(30 * time.Second)
	for written.Load() < enough && time.Now().Before(deadline) && werr.Load() == nil {
		if fi, err := os.Stat(path + "-wal"); err == nil {
			biggest = max(biggest, fi.Size())
		}
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if err, _ := werr.Load().(error); err != nil {
		t.Fatal(err)
	}
	if written.Load() < enough {
		t.Fatalf("wrote only %d bytes in 30 s: too few to test a bound of %d", written.Load(), limit)
	}
	if biggest > 8*limit {
		t.Errorf("WAL grew to %d bytes while %d were written; bound %d", biggest, written.Load(), limit)
	}
	t.Logf("%d bytes written, WAL at most %d bytes", written.Load(), biggest)
}
