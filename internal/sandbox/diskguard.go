package sandbox

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// diskCheckEvery bounds how often the guard asks the filesystem: a
// statfs per create at most once a second, never one per write.
const diskCheckEvery = time.Second

// diskGuard refuses new sandboxes while the data dir's filesystem has
// less free space than the operator's minimum (airlock serve
// --min-free-disk): on a full disk every store write fails, an audit
// chain among them, for every tenant. It never deletes anything: the
// sandboxes that run go on and every record is kept.
type diskGuard struct {
	dir    string
	minPct float64 // 0: no guard
	log    *slog.Logger

	mu      sync.Mutex
	checked time.Time
	err     error // the answer as of checked
}

// check returns a lowDiskError while the data dir's filesystem has less
// than the minimum free, as of a look at most diskCheckEvery old.
func (g *diskGuard) check(now time.Time) error {
	if g.dir == "" || g.minPct <= 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.checked.IsZero() && !now.Before(g.checked) && now.Sub(g.checked) < diskCheckEvery {
		return g.err
	}
	g.checked = now
	free, total, err := diskSpace(g.dir)
	switch {
	case err != nil:
		// Unknown is not low: a guard that cannot look refuses nothing.
		g.log.Error("free space of the data dir", "dir", g.dir, "err", err)
		g.err = nil
	case total == 0:
		g.err = nil
	case pct(free, total) < g.minPct:
		g.err = lowDiskError(fmt.Sprintf("the data dir %s has %s free of %s (%.1f%%), less than the %g%% kept free "+
			"(airlock serve --min-free-disk): new sandboxes are refused until space is freed; running sandboxes and all records are kept",
			g.dir, FormatBytes(int64(free)), FormatBytes(int64(total)), pct(free, total), g.minPct))
	default:
		g.err = nil
	}
	return g.err
}

func pct(part, whole uint64) float64 { return 100 * float64(part) / float64(whole) }
