package e2b

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/client"
)

// Airlock's API has no watch, so the facade's watchers poll: they list the
// directory through the API with the caller's credential and diff the
// listing against the previous one. A poll sees only what differs between
// two listings: events arrive up to a poll late, several writes to a file
// between polls are one WRITE, a file created and removed between polls is
// never seen, and a rename is a REMOVE of the old name and a CREATE of the
// new one (RENAME is never sent).

// Bounds of watching. A watch lists every directory below its root on
// every poll, so both the entries and the depth of a recursive watch are
// bounded, and so is the number of watchers, lest a caller turn the facade
// into a load generator against the API.
const (
	watchPoll           = 250 * time.Millisecond
	watchIdle           = time.Minute // a polled watcher not polled for this long is dropped
	maxWatchEntries     = 5000
	maxWatchDepth       = 16
	maxWatchersPerOwner = 16 // per sandbox and caller
	maxWatchers         = 1024
)

// filesystem.EventType names.
const (
	eventCreate = "EVENT_TYPE_CREATE"
	eventWrite  = "EVENT_TYPE_WRITE"
	eventRemove = "EVENT_TYPE_REMOVE"
	eventRename = "EVENT_TYPE_RENAME"
	eventChmod  = "EVENT_TYPE_CHMOD"
)

// snapshot is a listing below a watched directory, keyed by the path
// relative to it (which is also an event's name, as envd names them).
type snapshot map[string]client.FileEntry

// takeSnapshot lists dir, and below it down to maxWatchDepth if recursive.
func takeSnapshot(ctx context.Context, c *client.Client, id, dir string, recursive bool) (snapshot, *rpcError) {
	snap := snapshot{}
	var walk func(rel string, depth int) *rpcError
	walk = func(rel string, depth int) *rpcError {
		ents, err := c.ListDir(ctx, id, path.Join(dir, rel))
		if err != nil {
			if errors.Is(err, client.ErrInvalid) {
				return rpcErrorf(codeInvalidArgument, "%s is not a directory", path.Join(dir, rel))
			}
			return rpcErrorOf(err)
		}
		for _, e := range ents {
			if len(snap) >= maxWatchEntries {
				return rpcErrorf(codeResourceExhausted, "watching %s: over %d entries; watch a smaller directory", dir, maxWatchEntries)
			}
			name := path.Join(rel, e.Name)
			snap[name] = e
			if recursive && e.Type == "dir" && depth < maxWatchDepth {
				if rerr := walk(name, depth+1); rerr != nil {
					if rerr.Code == codeNotFound || rerr.Code == codeInvalidArgument {
						continue // gone or replaced since its parent was listed
					}
					return rerr
				}
			}
		}
		return nil
	}
	if rerr := walk("", 1); rerr != nil {
		return nil, rerr
	}
	return snap, nil
}

// diffSnapshots is the events that turn old into cur, in the order of
// their names: CREATE for a new entry, REMOVE for a gone one (and both
// for one whose type changed), WRITE for a file whose size or modification
// time changed, CHMOD for an entry whose permissions changed. A directory
// whose contents changed is not written to, as inotify sees it.
func diffSnapshots(old, cur snapshot) []fsEvent {
	var evs []fsEvent
	for name, e := range cur {
		o, ok := old[name]
		switch {
		case !ok:
			evs = append(evs, fsEvent{Name: name, Type: eventCreate})
		case o.Type != e.Type:
			evs = append(evs, fsEvent{Name: name, Type: eventRemove}, fsEvent{Name: name, Type: eventCreate})
		default:
			if e.Type != "dir" && (o.Size != e.Size || !o.MTime.Equal(e.MTime)) {
				evs = append(evs, fsEvent{Name: name, Type: eventWrite})
			}
			if o.Mode != e.Mode {
				evs = append(evs, fsEvent{Name: name, Type: eventChmod})
			}
		}
	}
	for name := range old {
		if _, ok := cur[name]; !ok {
			evs = append(evs, fsEvent{Name: name, Type: eventRemove})
		}
	}
	order := map[string]int{eventRemove: 0, eventCreate: 1, eventWrite: 2, eventChmod: 3}
	slices.SortStableFunc(evs, func(a, b fsEvent) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return order[a.Type] - order[b.Type]
	})
	return evs
}

// withEntries adds each event's entry (not for a removal) when the caller
// asked for them.
func withEntries(evs []fsEvent, cur snapshot, dir string) []fsEvent {
	for i := range evs {
		if evs[i].Type == eventRemove {
			continue
		}
		if e, ok := cur[evs[i].Name]; ok {
			ei := entryOf(e, path.Join(dir, evs[i].Name))
			evs[i].Entry = &ei
		}
	}
	return evs
}

// watcher is one watch of a directory: a WatchDir stream's or one made by
// CreateWatcher and polled by GetWatcherEvents.
type watcher struct {
	id, sandbox, owner string
	dir                string
	recursive, entries bool

	mu       sync.Mutex // one poll at a time
	last     snapshot
	lastUsed time.Time
}

// poll lists the directory again and returns what changed since the last
// poll.
func (w *watcher) poll(ctx context.Context, c *client.Client) ([]fsEvent, *rpcError) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cur, rerr := takeSnapshot(ctx, c, w.sandbox, w.dir, w.recursive)
	if rerr != nil {
		return nil, rerr
	}
	evs := diffSnapshots(w.last, cur)
	if w.entries {
		evs = withEntries(evs, cur, w.dir)
	}
	w.last = cur
	return evs, nil
}

// watchTable holds the watchers, per sandbox and caller. Like ptyTable it
// is only a name table: every poll lists through the API with the caller's
// credential. It runs no goroutine: idle watchers are swept when the table
// is next used.
type watchTable struct {
	mu sync.Mutex
	m  map[string]*watcher
}

// ownerOf names a caller without keeping its credential.
func ownerOf(token, sandbox string) string {
	h := sha256.Sum256([]byte(token + "\x00" + sandbox))
	return hex.EncodeToString(h[:])
}

func (t *watchTable) add(w *watcher, now time.Time) *rpcError {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	if t.m == nil {
		t.m = map[string]*watcher{}
	}
	if len(t.m) >= maxWatchers {
		return rpcErrorf(codeResourceExhausted, "the server has %d watchers, its limit", maxWatchers)
	}
	n := 0
	for _, o := range t.m {
		if o.owner == w.owner {
			n++
		}
	}
	if n >= maxWatchersPerOwner {
		return rpcErrorf(codeResourceExhausted, "%d watchers of this sandbox are open, the limit; remove one first", n)
	}
	var b [12]byte
	rand.Read(b[:])
	w.id = "w" + hex.EncodeToString(b[:])
	w.lastUsed = now
	t.m[w.id] = w
	return nil
}

// get finds the caller's watcher and marks it used; another caller's is
// not found.
func (t *watchTable) get(id, owner string, now time.Time) (*watcher, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	w, ok := t.m[id]
	if !ok || w.owner != owner {
		return nil, false
	}
	w.lastUsed = now
	return w, true
}

func (t *watchTable) remove(id, owner string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.m[id]
	if !ok || w.owner != owner {
		return false
	}
	delete(t.m, id)
	return true
}

// sweep drops watchers unused for watchIdle. A stream's watcher is marked
// used on every poll, so only abandoned polled ones go.
func (t *watchTable) sweep(now time.Time) {
	for id, w := range t.m {
		if now.Sub(w.lastUsed) > watchIdle {
			delete(t.m, id)
		}
	}
}

func (t *watchTable) touch(w *watcher, now time.Time) {
	t.mu.Lock()
	w.lastUsed = now
	t.mu.Unlock()
}
