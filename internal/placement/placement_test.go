package placement

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/runtime"
)

// node is a runtime that records its sandboxes, or refuses with refuse.
type node struct {
	runtime.Runtime // nil: only what placement calls is implemented
	name            string
	mu              sync.Mutex
	ids             []string
	refuse          error
}

type sandbox struct {
	runtime.Sandbox
	id string
}

func (s sandbox) ID() string { return s.id }

func (n *node) Create(_ context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.refuse != nil {
		return nil, n.refuse
	}
	n.ids = append(n.ids, spec.ID)
	return sandbox{id: spec.ID}, nil
}

func (n *node) Get(_ context.Context, id string) (runtime.Sandbox, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, have := range n.ids {
		if have == id {
			return sandbox{id: id}, nil
		}
	}
	return nil, fmt.Errorf("%w: sandbox %s on %s", runtime.ErrNotFound, id, n.name)
}

func (n *node) List(context.Context) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.ids...), nil
}

func (n *node) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.ids)
}

// registry is a set of ready nodes with their reported use.
type registry struct {
	nodes map[string]*node
	info  map[string]nodes.Node
	lost  map[string]bool
}

func (r *registry) Placeable(context.Context) ([]nodes.Node, error) {
	var out []nodes.Node
	for name, n := range r.info {
		if !r.lost[name] {
			out = append(out, n)
		}
	}
	return out, nil
}

func (r *registry) Runtime(_ context.Context, name string) (runtime.Runtime, error) {
	if r.lost[name] {
		return nil, fmt.Errorf("%w: node %s is lost", runtime.ErrUnavailable, name)
	}
	return r.nodes[name], nil
}

func (r *registry) Names(context.Context) ([]string, error) {
	var out []string
	for name := range r.nodes {
		out = append(out, name)
	}
	return out, nil
}

func newRegistry(used map[string]int) *registry {
	r := &registry{nodes: map[string]*node{}, info: map[string]nodes.Node{}, lost: map[string]bool{}}
	for name, u := range used {
		r.nodes[name] = &node{name: name}
		r.info[name] = nodes.Node{Name: name, Capacity: nodes.Capacity{CPUs: 2, MemoryMB: 4096, Sandboxes: 100}, Use: nodes.Use{Sandboxes: u, MemoryMB: 100}}
	}
	return r
}

// TestLeastLoaded: with three nodes, the least loaded takes new
// sandboxes; its placements count against it before its heartbeat says
// so, so a burst spreads.
func TestLeastLoaded(t *testing.T) {
	reg := newRegistry(map[string]int{"a": 90, "b": 10, "c": 50})
	p := New(Options{Nodes: reg})
	ctx := context.Background()
	for i := range 30 {
		if _, err := p.Create(ctx, runtime.Spec{ID: fmt.Sprintf("s%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := reg.nodes["a"].count(), reg.nodes["b"].count(), reg.nodes["c"].count()
	if a != 0 || b < c || b+c != 30 {
		t.Errorf("placements a=%d b=%d c=%d: want none on the busiest, most on the least loaded", a, b, c)
	}
	if got := p.Locate("s0"); got == "" || got == "a" {
		t.Errorf("Locate(s0) = %q", got)
	}
	// Get goes to the node that holds it.
	for i := range 30 {
		if _, err := p.Get(ctx, fmt.Sprintf("s%d", i)); err != nil {
			t.Errorf("get s%d: %v", i, err)
		}
	}
	ids, err := p.List(ctx)
	if err != nil || len(ids) != 30 {
		t.Errorf("List = %d ids, %v", len(ids), err)
	}
}

// TestFailover: a node that refuses hands the create to the next; bad
// input is not retried; a template no node has is not found; full nodes
// and lost ones are not chosen; with none left, unavailable.
func TestFailover(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(map[string]int{"a": 0, "b": 0})
	reg.nodes["a"].refuse = fmt.Errorf("%w: out of uid ranges", runtime.ErrUnavailable)
	p := New(Options{Nodes: reg})
	for i := range 5 {
		if _, err := p.Create(ctx, runtime.Spec{ID: fmt.Sprintf("f%d", i)}); err != nil {
			t.Fatalf("create with one node refusing: %v", err)
		}
	}
	if reg.nodes["b"].count() != 5 {
		t.Errorf("b holds %d, want 5", reg.nodes["b"].count())
	}
	reg.nodes["b"].refuse = fmt.Errorf("%w: memory_mb", runtime.ErrInvalid)
	reg.nodes["a"].refuse = nil
	if _, err := p.Create(ctx, runtime.Spec{ID: "bad"}); err != nil && !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("invalid spec: %v", err)
	}
	reg.nodes["a"].refuse = fmt.Errorf("%w: template py", runtime.ErrNotFound)
	reg.nodes["b"].refuse = fmt.Errorf("%w: template py", runtime.ErrNotFound)
	if _, err := p.Create(ctx, runtime.Spec{ID: "t", Template: "py"}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("a template no node has: %v, want not found", err)
	}
	reg.nodes["a"].refuse, reg.nodes["b"].refuse = nil, nil
	full := reg.info["a"]
	full.Use.Sandboxes = 100
	reg.info["a"] = full
	reg.lost["b"] = true
	_, err := p.Create(ctx, runtime.Spec{ID: "none"})
	if !errors.Is(err, runtime.ErrUnavailable) || !strings.Contains(err.Error(), "no node has room") {
		t.Errorf("no node with room: %v", err)
	}
	// A sandbox on a lost node: its calls say so.
	if _, err := p.Get(ctx, "f0"); !errors.Is(err, runtime.ErrUnavailable) || !strings.Contains(err.Error(), "lost") {
		t.Errorf("get on a lost node: %v", err)
	}
}

// TestWhere: a sandbox this process did not place is found by its record.
func TestWhere(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(map[string]int{"a": 0})
	reg.nodes["a"].ids = []string{"old"}
	local := &node{name: "local", ids: []string{"here"}}
	p := New(Options{Nodes: reg, Local: local, Where: func(_ context.Context, id string) (string, error) {
		switch id {
		case "old":
			return "a", nil
		case "here":
			return "", nil // a record from before nodes
		}
		return "", fmt.Errorf("no record %s", id)
	}})
	if _, err := p.Get(ctx, "old"); err != nil {
		t.Errorf("get a sandbox by its record: %v", err)
	}
	if _, err := p.Get(ctx, "here"); err != nil {
		t.Errorf("get a local sandbox of an old record: %v", err)
	}
	if p.Locate("old") != "a" || p.Locate("here") != runtime.LocalNode {
		t.Errorf("Locate: %q %q", p.Locate("old"), p.Locate("here"))
	}
	if _, err := p.Get(ctx, "orphan"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("a sandbox without a record: %v", err)
	}
}

// TestCacheForgets: sandboxes not looked up for a minute leave the cache
// (their records keep their node), so it does not grow with every
// sandbox ever created; one looked up stays.
func TestCacheForgets(t *testing.T) {
	reg := newRegistry(map[string]int{"a": 0})
	p := New(Options{Nodes: reg})
	ctx := context.Background()
	for i := range 50 {
		if _, err := p.Create(ctx, runtime.Spec{ID: fmt.Sprintf("c%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	p.mu.Lock()
	for id, sp := range p.placed {
		sp.at = sp.at.Add(-2 * placedTTL)
		p.placed[id] = sp
	}
	p.swept = p.swept.Add(-2 * placedTTL)
	p.mu.Unlock()
	p.Locate("c7") // in use: stays
	if _, err := p.Create(ctx, runtime.Spec{ID: "new"}); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	n := len(p.placed)
	p.mu.Unlock()
	if n != 2 || p.Locate("c7") != "a" || p.Locate("new") != "a" {
		t.Errorf("cache holds %d entries after a sweep, want c7 and new", n)
	}
}

// TestTooSmall: a node with fewer CPUs or less memory than a sandbox asks
// for is never chosen, however empty; when no node is big enough, the
// reason says so.
func TestTooSmall(t *testing.T) {
	ctx := context.Background()
	reg := newRegistry(map[string]int{"small": 0, "big": 80})
	reg.info["big"] = nodes.Node{Name: "big", Capacity: nodes.Capacity{CPUs: 8, MemoryMB: 16384, Sandboxes: 100}, Use: nodes.Use{Sandboxes: 80, MemoryMB: 100}}
	p := New(Options{Nodes: reg})
	for i := range 10 {
		if _, err := p.Create(ctx, runtime.Spec{ID: fmt.Sprintf("cpu%d", i), Limits: runtime.Limits{CPUs: 4}}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Create(ctx, runtime.Spec{ID: fmt.Sprintf("mem%d", i), Limits: runtime.Limits{MemoryMB: 8192}}); err != nil {
			t.Fatal(err)
		}
	}
	if s, b := reg.nodes["small"].count(), reg.nodes["big"].count(); s != 0 || b != 20 {
		t.Errorf("placements small=%d big=%d: want all 20 on big", s, b)
	}
	_, err := p.Create(ctx, runtime.Spec{ID: "huge", Limits: runtime.Limits{CPUs: 16}})
	if !errors.Is(err, runtime.ErrUnavailable) || !strings.Contains(err.Error(), "2 too small") {
		t.Errorf("16 cpus: %v, want unavailable naming 2 nodes too small", err)
	}
}
