// Package placement is the runtime a control plane gives its sandbox
// service: it places each new sandbox on a node (the control plane's own
// host, "local", when it has one, or a node that joined) and sends every
// later call to the node that runs it, and keeps templates where the
// sandboxes made from them go: a template is copied to the node a
// sandbox is placed on when that node lacks it (templates.go). It
// decides nothing else: quotas, records and audit stay the service's.
//
// A create samples a few of the nodes with room for its limits, as E2B's
// API does, rather than scanning all, tries the least loaded first and
// fails over to the next when one refuses. A later call finds its
// sandbox's node in a cache filled by Create, else in the sandbox's
// record (Options.Where); the cache drops what is not looked up for a
// minute.
package placement

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/runtime"
)

// Nodes is the registry of joined nodes (nodes.Service).
type Nodes interface {
	// Placeable returns the nodes that take new sandboxes now.
	Placeable(ctx context.Context) ([]nodes.Node, error)
	// Runtime returns the runtime of the named node; an unreachable or
	// lost node is an error wrapping runtime.ErrUnavailable that says so.
	Runtime(ctx context.Context, name string) (runtime.Runtime, error)
	// Names returns the name of every joined node.
	Names(ctx context.Context) ([]string, error)
}

// Options configure a Runtime.
type Options struct {
	// Local is the control plane's own runtime, nil for none (serve
	// --no-local-node).
	Local runtime.Runtime
	// LocalStatus reports the local node's capacity and use.
	LocalStatus func(ctx context.Context) (nodes.Capacity, nodes.Use, error)
	// Nodes are the joined nodes; nil for none.
	Nodes Nodes
	// Where returns the node of a sandbox from its record ("" if the
	// record names none).
	Where  func(ctx context.Context, id string) (string, error)
	Logger *slog.Logger
}

// sample is how many nodes with room a create considers.
const sample = 3

// Runtime places sandboxes on nodes. It implements runtime.Runtime,
// runtime.Templater, runtime.Locator and runtime.LazyGetter; the
// sandboxes it returns are its nodes' own, with their optional
// interfaces (runtime.OneShotRunner, runtime.DestroyStatser).
type Runtime struct {
	o Options

	mu     sync.Mutex
	placed map[string]spot        // sandbox id -> where, a cache of its record
	swept  time.Time              // when placed was last rid of old entries
	recent map[string][]time.Time // node -> placements not yet in its heartbeat

	tmplLocks keyed[sync.RWMutex] // template name -> its lock (templates.go)
	copying   keyed[sync.Mutex]   // "node/template" -> the copy under way
}

var (
	_ runtime.Runtime     = (*Runtime)(nil)
	_ runtime.Templater   = (*Runtime)(nil)
	_ runtime.Locator     = (*Runtime)(nil)
	_ runtime.NodeRouter  = (*Runtime)(nil)
	_ runtime.NodeChooser = (*Runtime)(nil)
	_ runtime.LazyGetter  = (*Runtime)(nil)
)

// Choose names a ready node with room for lim other than not: the least
// loaded of a few, as a create would pick.
func (r *Runtime) Choose(ctx context.Context, lim runtime.Limits, not string) (string, error) {
	cands, why, err := r.candidates(ctx, lim.WithDefaults())
	if err != nil {
		return "", err
	}
	cands = slices.DeleteFunc(cands, func(c candidate) bool { return c.name == not })
	if len(cands) == 0 {
		return "", fmt.Errorf("%w: no other node has room (%s)", runtime.ErrUnavailable, why)
	}
	rand.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	k := min(sample, len(cands))
	return slices.MinFunc(cands[:k], func(a, b candidate) int { return cmp.Compare(a.load, b.load) }).name, nil
}

// On is the runtime of the named node ("" is the local one).
func (r *Runtime) On(ctx context.Context, node string) (runtime.Runtime, error) {
	if node == "" {
		node = runtime.LocalNode
	}
	return r.runtimeOf(ctx, node)
}

// New returns a Runtime.
func New(o Options) *Runtime {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Runtime{o: o, placed: map[string]spot{}, recent: map[string][]time.Time{}, swept: time.Now()}
}

// candidate is a node a sandbox may go to.
type candidate struct {
	name string
	load float64 // share of its sandboxes taken, placements since its heartbeat included
}

// Create places the sandbox on a node with room and creates it there.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	cands, why, err := r.candidates(ctx, spec.Limits.WithDefaults())
	if err != nil {
		return nil, err
	}
	if spec.Node != "" {
		// Its snapshot or volumes are there: no other node will do.
		cands = slices.DeleteFunc(cands, func(c candidate) bool { return c.name != spec.Node })
		if len(cands) == 0 {
			return nil, fmt.Errorf("%w: %w: node %s, which holds the sandbox's snapshot or volumes, has no room for it or is not ready (%s)",
				runtime.ErrUnavailable, runtime.ErrNoRoom, spec.Node, why)
		}
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("%w: no node has room for the sandbox (%s)", runtime.ErrUnavailable, why)
	}
	// A few at random, the least loaded of them first; the rest after,
	// should all of those refuse.
	rand.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	k := min(sample, len(cands))
	slices.SortStableFunc(cands[:k], func(a, b candidate) int { return cmp.Compare(a.load, b.load) })
	// Where the template is, if one of those has room; else it is copied
	// to the first that takes the sandbox. A snapshot's node has the
	// template the snapshot was taken on (sandbox.createElsewhere copies
	// it with a snapshot it streams).
	copyTemplate := movable(spec.Template) && spec.Snapshot == ""
	var cp copies
	if copyTemplate {
		if cp, err = r.copiesOf(ctx, spec.Template); err != nil {
			return nil, err
		}
		cands = preferHolders(cands, cp)
	}
	return r.createOn(ctx, spec, cands, copyTemplate, cp)
}

// createOn creates the sandbox on the first of cands that takes it,
// copying its template there first when copyTemplate is set.
func (r *Runtime) createOn(ctx context.Context, spec runtime.Spec, cands []candidate, copyTemplate bool, cp copies) (runtime.Sandbox, error) {
	var refusals []string
	notFound := 0
	for _, c := range cands {
		rt, err := r.runtimeOf(ctx, c.name)
		if err != nil {
			refusals = append(refusals, err.Error())
			continue
		}
		if copyTemplate {
			if err := r.ensure(ctx, c.name, cp); err != nil {
				r.o.Logger.Warn("placement: could not copy a template to a node", "node", c.name, "template", spec.Template, "err", err)
				refusals = append(refusals, fmt.Sprintf("node %s: %v", c.name, err))
				continue
			}
		}
		r.note(spec.ID, c.name)
		sb, err := rt.Create(ctx, spec)
		if err == nil {
			return sb, nil
		}
		r.forget(spec.ID)
		// What no node could do is not retried elsewhere.
		if errors.Is(err, runtime.ErrInvalid) || errors.Is(err, runtime.ErrConflict) {
			return nil, err
		}
		if errors.Is(err, runtime.ErrNotFound) {
			notFound++ // a template the node lacks
		}
		r.o.Logger.Warn("placement: node refused a sandbox", "node", c.name, "sandbox", spec.ID, "err", err)
		refusals = append(refusals, fmt.Sprintf("node %s: %v", c.name, err))
	}
	if notFound == len(cands) {
		return nil, fmt.Errorf("%w: no node with room has it: %s", runtime.ErrNotFound, strings.Join(refusals, "; "))
	}
	return nil, fmt.Errorf("%w: every node with room refused the sandbox: %s", runtime.ErrUnavailable, strings.Join(refusals, "; "))
}

// candidates are the nodes with room for lim, and why there are none.
func (r *Runtime) candidates(ctx context.Context, lim runtime.Limits) ([]candidate, string, error) {
	type offer struct {
		name string
		cap  nodes.Capacity
		use  nodes.Use
	}
	var offers []offer
	if r.o.Nodes != nil {
		list, err := r.o.Nodes.Placeable(ctx)
		if err != nil {
			return nil, "", err
		}
		for _, n := range list {
			offers = append(offers, offer{n.Name, n.Capacity, n.Use})
		}
	}
	if r.o.Local != nil && len(offers) == 0 {
		// The one choice: the local runtime checks its own room, and the
		// create path pays for no reading of the host.
		return []candidate{{name: runtime.LocalNode}}, "", nil
	}
	if r.o.Local != nil && r.o.LocalStatus != nil {
		c, u, err := r.o.LocalStatus(ctx)
		if err != nil {
			return nil, "", err
		}
		offers = append(offers, offer{runtime.LocalNode, c, u})
	}
	if len(offers) == 0 {
		return nil, "no node is ready", nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []candidate
	full, small := 0, 0
	for _, o := range offers {
		pending := r.pendingLocked(o.name)
		taken := o.use.Sandboxes + pending
		switch {
		case lim.CPUs > float64(o.cap.CPUs) || lim.MemoryMB > o.cap.MemoryMB:
			// Never, however empty: a node with fewer CPUs than asked
			// for would run the sandbox at a fraction of its limit.
			small++
			continue
		case o.cap.Sandboxes <= 0 || taken >= o.cap.Sandboxes || o.use.MemoryMB+lim.MemoryMB > o.cap.MemoryMB:
			full++
			continue
		}
		out = append(out, candidate{name: o.name, load: float64(taken) / float64(o.cap.Sandboxes)})
	}
	why := fmt.Sprintf("%d ready, %d of them full", len(offers), full)
	if small > 0 {
		why += fmt.Sprintf(", %d too small", small)
	}
	return out, why, nil
}

// pendingWindow is how long a placement counts against its node before
// the node's own count shows it: a few heartbeats.
const pendingWindow = 10 * time.Second

// pendingLocked counts the placements on node within pendingWindow.
func (r *Runtime) pendingLocked(node string) int {
	cut := time.Now().Add(-pendingWindow)
	ts := r.recent[node]
	i := 0
	for i < len(ts) && ts[i].Before(cut) {
		i++
	}
	r.recent[node] = ts[i:]
	return len(ts) - i
}

// spot is the node of a sandbox, and when it was last looked up.
type spot struct {
	node string
	at   time.Time
}

// placedTTL is how long the cache keeps a sandbox not looked up: the
// record has its node by then, and the cache holds no destroyed one for
// long.
const placedTTL = time.Minute

// placeLocked caches the node of id, dropping entries not looked up for
// placedTTL once per placedTTL.
func (r *Runtime) placeLocked(id, node string, now time.Time) {
	r.placed[id] = spot{node, now}
	if now.Sub(r.swept) < placedTTL {
		return
	}
	r.swept = now
	for k, v := range r.placed {
		if now.Sub(v.at) >= placedTTL {
			delete(r.placed, k)
		}
	}
}

func (r *Runtime) note(id, node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	r.placeLocked(id, node, now)
	r.recent[node] = append(r.recent[node], now)
}

func (r *Runtime) forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.placed, id)
}

// Locate names the node of sandbox id, as far as this process knows.
func (r *Runtime) Locate(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	sp, ok := r.placed[id]
	if ok {
		sp.at = time.Now()
		r.placed[id] = sp
	}
	return sp.node
}

// nodeOf is the node of sandbox id: from the cache, else its record.
func (r *Runtime) nodeOf(ctx context.Context, id string) (string, error) {
	if n := r.Locate(id); n != "" {
		return n, nil
	}
	if r.o.Where == nil {
		return runtime.LocalNode, nil
	}
	n, err := r.o.Where(ctx, id)
	if err != nil {
		return "", err
	}
	if n == "" {
		n = runtime.LocalNode
	}
	r.mu.Lock()
	r.placeLocked(id, n, time.Now())
	r.mu.Unlock()
	return n, nil
}

// runtimeOf is the runtime of the named node.
func (r *Runtime) runtimeOf(ctx context.Context, node string) (runtime.Runtime, error) {
	if node == runtime.LocalNode {
		if r.o.Local == nil {
			return nil, fmt.Errorf("%w: this control plane runs no sandboxes of its own", runtime.ErrNotFound)
		}
		return r.o.Local, nil
	}
	if r.o.Nodes == nil {
		return nil, fmt.Errorf("%w: node %s is not known here", runtime.ErrUnavailable, node)
	}
	return r.o.Nodes.Runtime(ctx, node)
}

// Get finds the sandbox on its node.
func (r *Runtime) Get(ctx context.Context, id string) (runtime.Sandbox, error) {
	rt, err := r.runtimeFor(ctx, id)
	if err != nil {
		return nil, err
	}
	sb, err := rt.Get(ctx, id)
	if errors.Is(err, runtime.ErrNotFound) {
		r.forget(id)
	}
	return sb, err
}

// LazyGet is the sandbox's handle from its node's runtime, not asked
// whether the sandbox is there where it can say without a round trip
// (runtime.LazyGetter).
func (r *Runtime) LazyGet(ctx context.Context, id string) (runtime.Sandbox, error) {
	rt, err := r.runtimeFor(ctx, id)
	if err != nil {
		return nil, err
	}
	return runtime.GetLazy(ctx, rt, id)
}

// runtimeFor is the runtime of sandbox id's node.
func (r *Runtime) runtimeFor(ctx context.Context, id string) (runtime.Runtime, error) {
	node, err := r.nodeOf(ctx, id)
	if err != nil {
		// No record: no node to ask. The local runtime may still hold it
		// (an orphan the service reclaims).
		if r.o.Local != nil {
			return r.o.Local, nil
		}
		return nil, fmt.Errorf("%w: sandbox %s", runtime.ErrNotFound, id)
	}
	return r.runtimeOf(ctx, node)
}

// List lists the sandboxes of every node that answers; one that does not
// is left out (its sandboxes are not orphans).
func (r *Runtime) List(ctx context.Context) ([]string, error) {
	var ids []string
	if r.o.Local != nil {
		local, err := r.o.Local.List(ctx)
		if err != nil {
			return nil, err
		}
		ids = append(ids, local...)
	}
	if r.o.Nodes == nil {
		return ids, nil
	}
	names, err := r.o.Nodes.Names(ctx)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		rt, err := r.o.Nodes.Runtime(ctx, name)
		var some []string
		if err == nil {
			some, err = rt.List(ctx)
		}
		if err != nil {
			r.o.Logger.Warn("placement: list a node's sandboxes", "node", name, "err", err)
			continue
		}
		r.mu.Lock()
		now := time.Now()
		for _, id := range some {
			r.placeLocked(id, name, now)
		}
		r.mu.Unlock()
		ids = append(ids, some...)
	}
	return ids, nil
}

// Protections are the local runtime's, or else none known.
func (r *Runtime) Protections() []runtime.Protection {
	if r.o.Local != nil {
		return r.o.Local.Protections()
	}
	return nil
}
