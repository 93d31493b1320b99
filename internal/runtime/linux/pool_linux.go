package linux

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// poolPrefix names warm-pool sandboxes' directories and cgroups.
const poolPrefix = "pool-"

// pool keeps sandboxes booted with the default limits so that Create only
// binds one to its id: the namespaces, root filesystem, cgroup placement
// and agent start (most of a cold create) happen ahead of time. A pooled
// sandbox is exactly as isolated as a cold one; it differs only in its
// name and its hostname being the default. Its init boots at the lowest
// priority (nice 19, in a cgroup of nice 19's CPU weight), so refills
// take little CPU that live work wants (they ran beside the claimant's
// first command and doubled its time), and is set back to the default
// when it is handed out.
type pool struct {
	r    *Runtime
	size int // the least it keeps; more while creates come fast (target)
	max  int // the most, bounded by the host's memory
	lim  runtime.Limits

	mu      sync.Mutex
	ready   []*sandbox
	closed  bool
	booting bool          // a refill is due or under way
	defers  time.Duration // how long a refill waits for quiet at most (refillDefer)
	takes   []time.Time   // the newest creates it could serve, oldest first (at most max)
	peak    int           // the most of them within a rateWindow lately
	peakAt  time.Time     // when that peak was last reached

	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	errs    int   // boot failures, for diagnosis
	lastErr error // the latest of them
}

// The pool grows with the create rate: it keeps as many sandboxes as
// creates it could have served (claims, and creates that found it empty)
// came within a rateWindow, at least its configured size, and holds the
// highest such count for peakHold, so that the next burst like the last
// one finds them booted. It is bounded by maxPool and what the host's
// memory allows (an idle sandbox costs ~1.5 MiB of host memory, counted
// as poolSandboxMem; poolMemShare of what is available is the bound). Once
// the peak is past its hold and no create came for idleShrink, the extra
// ones go.
const (
	rateWindow     = time.Second
	peakHold       = 2 * time.Minute
	maxPool        = 128
	poolMemShare   = 64 // at most 1/64 of MemAvailable
	poolSandboxMem = 2 << 20
	idleShrink     = 30 * time.Second
	// A refill the pool can wait for waits for refillSettle without a
	// create, command or destroy in flight, refillDefer at the most (a
	// long command must not keep the pool short).
	refillSettle = 2 * time.Millisecond
	refillDefer  = 100 * time.Millisecond
)

func newPool(r *Runtime, size int) *pool {
	p := &pool{
		r: r, size: size, max: max(size, min(maxPool, int(memAvailable()/poolMemShare/poolSandboxMem))), lim: runtime.Limits{}.WithDefaults(),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		defers: refillDefer,
	}
	go p.fill()
	return p
}

// take hands out a pooled sandbox that fits spec, or nil (the caller then
// boots one cold). Only limits a live sandbox can take are adjusted: the
// /tmp size and, with disk images, the disk size are fixed at boot.
func (p *pool) take(spec runtime.Spec, lim runtime.Limits) *sandbox {
	if p == nil || spec.Hostname != "" || lim.TmpMB != p.lim.TmpMB || spec.Build || (spec.Template != "" && spec.Template != "base") ||
		spec.Snapshot != "" || len(spec.Volumes) > 0 {
		return nil
	}
	if p.r.quota != nil && p.r.quota.Mode() == "image" && lim.DiskMB != p.lim.DiskMB {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// A create that finds the pool empty is demand too: a burst must
	// grow it, not only the claims it could serve.
	p.demand(time.Now())
	select {
	case p.wake <- struct{}{}:
	default:
	}
	if len(p.ready) == 0 {
		return nil
	}
	sb := p.ready[0]
	// Still being created until Create has bound it.
	creating.add(sb.dir)
	p.ready = p.ready[1:]
	return sb
}

// demand records a create the pool could serve, made at now, and the
// peak it may raise. p.mu is held.
func (p *pool) demand(now time.Time) {
	p.takes = append(p.takes, now)
	if len(p.takes) > p.max {
		p.takes = p.takes[1:]
	}
	if n := p.recent(now); n >= p.peak || now.Sub(p.peakAt) >= peakHold {
		p.peak, p.peakAt = n, now
	}
}

// recent counts the creates the pool could serve in the rateWindow
// before now. p.mu is held.
func (p *pool) recent(now time.Time) int {
	n := 0
	for _, t := range p.takes {
		if now.Sub(t) < rateWindow {
			n++
		}
	}
	return n
}

// has says whether the pool holds the sandbox in directory name, booted
// and not yet handed out.
func (p *pool) has(name string) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, sb := range p.ready {
		if sb.p.Name == name {
			return true
		}
	}
	return false
}

// fill boots sandboxes until the pool is full, then waits for a take.
func (p *pool) fill() {
	defer close(p.done)
	backoff := time.Duration(0)
	var deferred time.Time // since when the due refill has waited for quiet
	for {
		select {
		case <-p.stop:
			return
		case <-time.After(backoff):
		}
		p.mu.Lock()
		target, extra := p.target(time.Now())
		need := len(p.ready) < target
		p.booting = need
		polite := len(p.ready) > 0 && 2*len(p.ready) >= target
		defers := p.defers
		var drop *sandbox
		if extra {
			drop, p.ready = p.ready[len(p.ready)-1], p.ready[:len(p.ready)-1]
		}
		p.mu.Unlock()
		if drop != nil {
			drop.destroy()
			continue
		}
		if !need {
			select {
			case <-p.stop:
				return
			case <-p.wake:
			case <-time.After(idleShrink):
			}
			continue
		}
		// While the pool holds at least half of what it wants, the boot
		// waits for the runtime's creates, commands and destroys to end
		// (see activity), p.defers at the most; any lower, it refills
		// at once, so that a burst or a steady stream of creates does not
		// drain it.
		if polite {
			if deferred.IsZero() {
				deferred = time.Now()
			}
			left := defers - time.Since(deferred)
			if q := p.r.act.quietIn(refillSettle); q != 0 && left > 0 {
				if q > 0 {
					left = min(left, q)
				}
				t := time.NewTimer(left)
				select {
				case <-p.stop:
					t.Stop()
					return
				case <-p.wake: // a claim: look again
				case <-p.r.act.done:
				case <-t.C:
				}
				t.Stop()
				continue
			}
		}
		deferred = time.Time{}
		name := poolName()
		dir := filepath.Join(p.r.sandboxesDir(), name)
		creating.add(dir)
		sb, err := p.r.boot(context.Background(), name, p.lim, defaultHostname, layering{Idle: true})
		if err != nil {
			creating.remove(dir)
			// The host may be out of uid ranges, memory or disk: retry
			// slowly rather than spin; Create still works cold.
			p.mu.Lock()
			p.errs++
			p.lastErr = err
			p.mu.Unlock()
			backoff = min(max(2*backoff, 100*time.Millisecond), 10*time.Second)
			continue
		}
		// One command first, still at the pool's priority: it waits for
		// the agent's threads and faults in its exec path and the base
		// template's loader and libc, which cost a claimant's first
		// command ~6 ms. It leaves nothing behind (a process that exited,
		// its pid reaped).
		if st, err := sb.warmUp(); err != nil || st.Code != 0 {
			sb.destroy()
			creating.remove(dir)
			p.mu.Lock()
			p.errs++
			p.lastErr = fmt.Errorf("warm-up command: exit %d, %v", st.Code, err)
			p.mu.Unlock()
			backoff = min(max(2*backoff, 100*time.Millisecond), 10*time.Second)
			continue
		}
		backoff = 0
		p.mu.Lock()
		closed := p.closed
		if !closed {
			p.ready = append(p.ready, sb)
		}
		p.mu.Unlock()
		creating.remove(dir)
		if closed {
			sb.destroy()
			return
		}
	}
}

// target is how many sandboxes the pool should hold now, and whether it
// holds one too many (more than that, and no create for idleShrink).
// p.mu is held.
func (p *pool) target(now time.Time) (int, bool) {
	want := max(p.size, p.recent(now))
	if !p.peakAt.IsZero() && now.Sub(p.peakAt) < peakHold {
		want = max(want, p.peak)
	}
	target := min(want, p.max)
	idle := len(p.takes) == 0 || now.Sub(p.takes[len(p.takes)-1]) > idleShrink
	return target, idle && len(p.ready) > target
}

// memAvailable is the host's MemAvailable in bytes (0 if unknown).
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// close stops filling and destroys the unclaimed sandboxes. Idempotent.
func (p *pool) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	ready := p.ready
	p.ready = nil
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	var errs []error
	for _, sb := range ready {
		errs = append(errs, sb.destroy())
	}
	return errors.Join(errs...)
}

func poolName() string {
	b := make([]byte, 8)
	rand.Read(b)
	return poolPrefix + hex.EncodeToString(b)
}

// warmUp runs `true` in a booted pool sandbox (see fill), without
// counting it as the runtime's activity.
func (sb *sandbox) warmUp() (runtime.ExitStatus, error) {
	p, err := sb.start(context.Background(), runtime.ExecRequest{Argv: []string{"true"}}, func() {})
	if err != nil {
		return runtime.ExitStatus{}, err
	}
	return p.Wait()
}

// PoolFull says whether the warm pool holds as many sandboxes as it wants
// now (its size grows with the create rate) and no refill is due or
// under way: a create now meets no boot beside it.
func (r *Runtime) PoolFull() bool {
	if r.pool == nil {
		return false
	}
	r.pool.mu.Lock()
	defer r.pool.mu.Unlock()
	target, _ := r.pool.target(time.Now())
	return !r.pool.booting && len(r.pool.ready) >= target
}

// PoolReady reports how many booted sandboxes wait in the warm pool.
func (r *Runtime) PoolReady() int {
	if r.pool == nil {
		return 0
	}
	r.pool.mu.Lock()
	defer r.pool.mu.Unlock()
	return len(r.pool.ready)
}
