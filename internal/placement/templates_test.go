package placement

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/tmplver"
)

// tnode is a node that keeps templates in memory: a template's files are
// its bytes, moved as they are.
type tnode struct {
	*node
	mu       sync.Mutex
	tmpl     map[string]runtime.TemplateInfo
	files    map[string][]byte
	spool    map[string][]byte
	installs int
	down     bool // answers nothing about templates
}

func (n *tnode) Templates(context.Context) ([]runtime.TemplateInfo, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return nil, fmt.Errorf("%w: node %s could not be reached", runtime.ErrUnavailable, n.name)
	}
	out := []runtime.TemplateInfo{runtime.BaseTemplate}
	for _, t := range n.tmpl {
		out = append(out, t)
	}
	return out, nil
}

func (n *tnode) Template(ctx context.Context, name string) (runtime.TemplateInfo, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return runtime.TemplateInfo{}, fmt.Errorf("%w: node %s could not be reached", runtime.ErrUnavailable, n.name)
	}
	if name == "base" {
		return runtime.BaseTemplate, nil
	}
	t, ok := n.tmpl[name]
	if !ok {
		return t, fmt.Errorf("%w: template %s", runtime.ErrNotFound, name)
	}
	return t, nil
}

func (n *tnode) CommitTemplate(context.Context, string, runtime.TemplateInfo) (runtime.TemplateInfo, error) {
	return runtime.TemplateInfo{}, runtime.ErrUnsupported
}

func (n *tnode) DeleteTemplate(_ context.Context, name string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.tmpl[name]; !ok {
		return fmt.Errorf("%w: template %s", runtime.ErrNotFound, name)
	}
	delete(n.tmpl, name)
	return nil
}

func (n *tnode) ExportTemplate(_ context.Context, name, version string, off int64, w io.Writer) error {
	n.mu.Lock()
	t, ok := n.tmpl[name]
	b := n.files[name]
	n.mu.Unlock()
	if !ok || tmplver.Of(t) != version {
		return fmt.Errorf("%w: template %s", runtime.ErrConflict, name)
	}
	_, err := w.Write(b[off:])
	return err
}

func (n *tnode) ImportTemplate(_ context.Context, t runtime.TemplateInfo, r io.Reader) (int64, bool, error) {
	b, err := io.ReadAll(r)
	n.mu.Lock()
	defer n.mu.Unlock()
	if have, ok := n.tmpl[t.Name]; ok && tmplver.Of(have) == tmplver.Of(t) {
		return 0, true, nil
	}
	n.spool[t.Name] = append(n.spool[t.Name], b...)
	if err != nil || len(n.spool[t.Name]) < len(t.Description) {
		return int64(len(n.spool[t.Name])), false, nil
	}
	// Held a while, so that concurrent creates meet the copy under way.
	time.Sleep(20 * time.Millisecond)
	n.tmpl[t.Name], n.files[t.Name] = t, n.spool[t.Name]
	delete(n.spool, t.Name)
	n.installs++
	return int64(len(n.files[t.Name])), true, nil
}

// Create refuses a template the node lacks, as a runtime does.
func (n *tnode) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	if _, err := n.Template(ctx, cmpOr(spec.Template, "base")); err != nil {
		return nil, err
	}
	return n.node.Create(ctx, spec)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func templateRegistry(used map[string]int) (*registry, map[string]*tnode) {
	reg := newRegistry(used)
	tn := map[string]*tnode{}
	for name, n := range reg.nodes {
		tn[name] = &tnode{node: n, tmpl: map[string]runtime.TemplateInfo{}, files: map[string][]byte{}, spool: map[string][]byte{}}
	}
	return reg, tn
}

// tregistry serves the template-keeping nodes.
type tregistry struct {
	*registry
	tn map[string]*tnode
}

func (r tregistry) Runtime(ctx context.Context, name string) (runtime.Runtime, error) {
	if _, err := r.registry.Runtime(ctx, name); err != nil {
		return nil, err
	}
	return r.tn[name], nil
}

// TestTemplateCopiedOnDemand: creates from a template go to the node
// that holds it while it has room, least loaded first among holders; with
// its holder out of placement, the template is copied once to the node
// chosen, however many creates need it at once; the list says who holds
// it; a delete reaches every node, and refuses while one cannot answer.
func TestTemplateCopiedOnDemand(t *testing.T) {
	ctx := context.Background()
	reg, tn := templateRegistry(map[string]int{"a": 60, "b": 0, "c": 0})
	p := New(Options{Nodes: tregistry{reg, tn}})
	body := bytes.Repeat([]byte("x"), 100)
	tpl := runtime.TemplateInfo{Name: "py", Description: string(body), CreatedAt: time.Now().UTC().Truncate(time.Second)}
	tn["a"].tmpl["py"], tn["a"].files["py"] = tpl, body

	// a holds it and has room: it takes them, though busier.
	for i := range 4 {
		if _, err := p.Create(ctx, runtime.Spec{ID: fmt.Sprintf("p%d", i), Template: "py"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := tn["a"].count(); got != 4 {
		t.Errorf("a, which holds the template, took %d of 4", got)
	}
	// a out of placement (draining): b or c gets one copy, however many
	// creates need it at once.
	reg.lost["a"] = false
	delete(reg.info, "a")
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			if _, err := p.Create(ctx, runtime.Spec{ID: fmt.Sprintf("q%d", i), Template: "py"}); err != nil {
				t.Errorf("create while a drains: %v", err)
			}
		})
	}
	wg.Wait()
	if tn["b"].installs+tn["c"].installs == 0 || tn["b"].installs > 1 || tn["c"].installs > 1 {
		t.Errorf("copies: b %d, c %d; want one per node that took sandboxes", tn["b"].installs, tn["c"].installs)
	}
	for _, n := range []string{"b", "c"} {
		if tn[n].count() > 0 && !bytes.Equal(tn[n].files["py"], body) {
			t.Errorf("%s's copy: %q", n, tn[n].files["py"])
		}
	}
	got, err := p.Template(ctx, "py")
	if err != nil || len(got.Nodes) < 2 || got.Nodes[0] != "a" || !got.CreatedAt.Equal(tpl.CreatedAt) {
		t.Errorf("Template: %+v %v", got, err)
	}
	list, err := p.Templates(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "base" || len(list[0].Nodes) != 3 || !slices.Equal(list[1].Nodes, got.Nodes) {
		t.Errorf("Templates: %+v %v", list, err)
	}
	// A delete while a node cannot answer deletes nothing.
	tn["c"].down = true
	if err := p.DeleteTemplate(ctx, "py"); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("delete with c down: %v", err)
	}
	if _, ok := tn["a"].tmpl["py"]; !ok {
		t.Error("a refused delete removed a's copy")
	}
	tn["c"].down = false
	if err := p.DeleteTemplate(ctx, "py"); err != nil {
		t.Fatal(err)
	}
	for name, n := range tn {
		if _, ok := n.tmpl["py"]; ok {
			t.Errorf("%s keeps the deleted template", name)
		}
	}
	if _, err := p.Create(ctx, runtime.Spec{ID: "gone", Template: "py"}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("create from the deleted template: %v", err)
	}
	// Held only by a node that cannot answer: unavailable, naming it,
	// not a guess of "not found".
	tn["c"].tmpl["py"] = tpl
	tn["c"].down = true
	for _, err := range []error{
		func() error { _, err := p.Template(ctx, "py"); return err }(),
		func() error { _, err := p.Create(ctx, runtime.Spec{ID: "c-down", Template: "py"}); return err }(),
	} {
		if !errors.Is(err, runtime.ErrUnavailable) || errors.Is(err, runtime.ErrNotFound) || !strings.Contains(err.Error(), "c: ") {
			t.Errorf("template held by a node that is down: %v, want unavailable naming c", err)
		}
	}
	tn["c"].down = false
	delete(tn["c"].tmpl, "py")

	// One host, no nodes joined: templates name no nodes.
	tn["a"].tmpl["py"] = tpl
	one := New(Options{Local: tn["a"], Nodes: tregistry{newRegistry(nil), nil}})
	if list, err := one.Templates(ctx); err != nil || len(list) != 2 || list[0].Nodes != nil || list[1].Nodes != nil {
		t.Errorf("Templates on one host: %+v %v", list, err)
	}
}
