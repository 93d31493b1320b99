package placement

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/images"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/tmplver"
)

// Templates across nodes. A built or imported template is made on one
// node (the build sandbox's, or for an image the local runtime, else the
// least loaded ready node) and copied to another when a sandbox on it is
// placed there: a create prefers the nodes with room that hold the
// template's newest version, least loaded first, and copies it (a tar of
// its tree, runtime.MoveStream, resumed where cut) to the node it picks
// only when none of them has room. base is each host's own and never
// moves. A rebuilt template replaces every copy: the other nodes drop
// theirs, and a node that could not be told keeps an older version,
// which no create uses and the next copy replaces. A delete must reach
// every node, or it refuses: a node that could not be asked might hold a
// copy that would show again when it returns.

var _ runtime.ImageImporter = (*Runtime)(nil)

// movable: a template that lives on some nodes only.
func movable(name string) bool { return name != "" && name != "base" }

// answer is one node's reply to a survey.
type answer struct {
	node string
	err  error
	list []runtime.TemplateInfo
}

// allNodes names every node: the local one first, then every joined one.
func (r *Runtime) allNodes(ctx context.Context) []string {
	var out []string
	if r.o.Local != nil {
		out = append(out, runtime.LocalNode)
	}
	if r.o.Nodes != nil {
		names, err := r.o.Nodes.Names(ctx)
		if err != nil {
			r.o.Logger.Warn("placement: list nodes", "err", err)
		}
		slices.Sort(names)
		out = append(out, names...)
	}
	return out
}

// surveyWait bounds each node's answer to a survey.
const surveyWait = 5 * time.Second

// survey asks every node at once, with ask, for what it holds of the
// templates; a node that cannot be asked has its error.
func (r *Runtime) survey(ctx context.Context, ask func(context.Context, runtime.Templater) ([]runtime.TemplateInfo, error)) []answer {
	names := r.allNodes(ctx)
	out := make([]answer, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			// A node that hangs (not yet lost) holds up no list or
			// create for long: it counts as one that cannot answer.
			ctx, cancel := context.WithTimeout(ctx, surveyWait)
			defer cancel()
			out[i].node = name
			rt, err := r.runtimeOf(ctx, name)
			if err != nil {
				out[i].err = err
				return
			}
			t, ok := rt.(runtime.Templater)
			if !ok {
				out[i].err = fmt.Errorf("%w: node %s keeps no templates", runtime.ErrUnsupported, name)
				return
			}
			out[i].list, out[i].err = ask(ctx, t)
		})
	}
	wg.Wait()
	return out
}

// copies is what the nodes hold of one template.
type copies struct {
	newest      runtime.TemplateInfo // as its holders record it
	current     []string             // the nodes holding the newest version
	all         []string             // the nodes holding any version
	unreachable []string             // "node: why", the nodes that could not say
	asked       []string             // every node
}

// copiesOf asks every node for template name. It is ErrNotFound when no
// node holds it, and ErrUnavailable when none that answers does but some
// could not be asked.
func (r *Runtime) copiesOf(ctx context.Context, name string) (copies, error) {
	var cp copies
	held := map[string]runtime.TemplateInfo{}
	answers := r.survey(ctx, func(ctx context.Context, t runtime.Templater) ([]runtime.TemplateInfo, error) {
		ti, err := t.Template(ctx, name)
		return []runtime.TemplateInfo{ti}, err
	})
	cp.asked = names(answers)
	for _, a := range answers {
		switch {
		case a.err == nil:
			held[a.node] = a.list[0]
			cp.all = append(cp.all, a.node)
		case !errors.Is(a.err, runtime.ErrNotFound) && !errors.Is(a.err, runtime.ErrUnsupported): // a node that keeps none holds none
			cp.unreachable = append(cp.unreachable, a.node+": "+a.err.Error())
		}
	}
	if len(cp.all) == 0 {
		if len(cp.unreachable) > 0 {
			// It may be on a node that cannot be asked now: "not found"
			// would be a guess, and a create retried later may succeed.
			return cp, fmt.Errorf("%w: template %s is on no node that answers, and these could not say whether they hold it: %s",
				runtime.ErrUnavailable, name, strings.Join(cp.unreachable, "; "))
		}
		return cp, fmt.Errorf("%w: template %s", runtime.ErrNotFound, name)
	}
	cp.newest = newestOf(held)
	v := tmplver.Of(cp.newest)
	for _, n := range cp.all {
		if tmplver.Of(held[n]) == v {
			cp.current = append(cp.current, n)
		}
	}
	return cp, nil
}

// newestOf is the latest made of the versions held, the same whichever
// node's record it is.
func newestOf(held map[string]runtime.TemplateInfo) runtime.TemplateInfo {
	var out runtime.TemplateInfo
	first := true
	for _, ti := range held {
		if first || ti.CreatedAt.After(out.CreatedAt) ||
			ti.CreatedAt.Equal(out.CreatedAt) && tmplver.Of(ti) > tmplver.Of(out) {
			out, first = ti, false
		}
	}
	out.Nodes = nil
	return out
}

// preferHolders puts the candidates holding the template's newest
// version first, least loaded first; the others keep their order after.
func preferHolders(cands []candidate, cp copies) []candidate {
	var have, lack []candidate
	for _, c := range cands {
		if slices.Contains(cp.current, c.name) {
			have = append(have, c)
		} else {
			lack = append(lack, c)
		}
	}
	slices.SortStableFunc(have, func(a, b candidate) int { return cmp.Compare(a.load, b.load) })
	return append(have, lack...)
}

// keyed is a lock per key, made on first use: per template name, per
// template and node; never freed (there are as many as templates).
type keyed[L any] struct {
	mu sync.Mutex
	m  map[string]*L
}

func (k *keyed[L]) get(key string) *L {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]*L{}
	}
	l, ok := k.m[key]
	if !ok {
		l = new(L)
		k.m[key] = l
	}
	return l
}

// tmplLock is the lock of template name: held shared while a copy of it
// is made, alone while it is made, replaced or deleted, so that a copy
// never brings back what a delete removed.
func (r *Runtime) tmplLock(name string) *sync.RWMutex { return r.tmplLocks.get(name) }

// EnsureTemplate copies the newest version of template to node unless it
// holds it already (a sandbox from a snapshot streamed there needs it).
func (r *Runtime) EnsureTemplate(ctx context.Context, node, template string) error {
	if !movable(template) {
		return nil
	}
	cp, err := r.copiesOf(ctx, template)
	if err != nil {
		return err
	}
	return r.ensure(ctx, node, cp)
}

// ensure copies cp's newest version to node unless it holds it already.
// Creates that need it on one node at once wait for one copy: the
// import of a version the node has is done at once.
func (r *Runtime) ensure(ctx context.Context, node string, cp copies) error {
	if slices.Contains(cp.current, node) {
		return nil
	}
	l := r.tmplLock(cp.newest.Name)
	l.RLock()
	defer l.RUnlock()
	// Copies of one template to one node, one at a time.
	cl := r.copying.get(node + "/" + cp.newest.Name)
	cl.Lock()
	defer cl.Unlock()
	dst, err := r.mover(ctx, node)
	if err != nil {
		return err
	}
	version := tmplver.Of(cp.newest)
	var errs []error
	for _, from := range cp.current {
		src, err := r.mover(ctx, from)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		start := time.Now()
		n, resumed, err := runtime.MoveStream(ctx,
			func(off int64, w io.Writer) error { return src.ExportTemplate(ctx, cp.newest.Name, version, off, w) },
			func(rd io.Reader) (int64, bool, error) { return dst.ImportTemplate(ctx, cp.newest, rd) })
		if err == nil {
			r.o.Logger.Info("placement: template copied to a node", "template", cp.newest.Name, "from", from, "to", node,
				"bytes", n, "resumed", resumed, "duration_ms", time.Since(start).Milliseconds())
			return nil
		}
		errs = append(errs, fmt.Errorf("from node %s: %w", from, err))
		if errors.Is(err, runtime.ErrConflict) || errors.Is(err, runtime.ErrInvalid) || ctx.Err() != nil {
			break // replaced meanwhile, refused, or given up: no other holder will do better
		}
	}
	return fmt.Errorf("copy template %s to node %s: %w", cp.newest.Name, node, errors.Join(errs...))
}

func (r *Runtime) mover(ctx context.Context, node string) (runtime.TemplateMover, error) {
	rt, err := r.runtimeOf(ctx, node)
	if err != nil {
		return nil, err
	}
	m, ok := rt.(runtime.TemplateMover)
	if !ok {
		return nil, fmt.Errorf("%w: node %s cannot move templates", runtime.ErrUnavailable, node)
	}
	return m, nil
}

// withNodes says which nodes hold ti when the control plane has nodes
// beyond its own host (asked names the nodes asked).
func withNodes(ti runtime.TemplateInfo, nodes, asked []string) runtime.TemplateInfo {
	ti.Nodes = nil
	if slices.ContainsFunc(asked, func(n string) bool { return n != runtime.LocalNode }) {
		ti.Nodes = slices.Clone(nodes)
		slices.Sort(ti.Nodes)
	}
	return ti
}

// names are the nodes of a survey's answers.
func names(as []answer) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.node
	}
	return out
}

// Templates lists the templates of every node that answers, each name
// once, at its newest version, base first.
func (r *Runtime) Templates(ctx context.Context) ([]runtime.TemplateInfo, error) {
	held := map[string]map[string]runtime.TemplateInfo{} // name -> node -> version
	var firstErr error
	answers := r.survey(ctx, func(ctx context.Context, t runtime.Templater) ([]runtime.TemplateInfo, error) {
		return t.Templates(ctx)
	})
	for _, a := range answers {
		if a.err != nil {
			firstErr = cmp.Or(firstErr, a.err)
			continue
		}
		for _, ti := range a.list {
			if held[ti.Name] == nil {
				held[ti.Name] = map[string]runtime.TemplateInfo{}
			}
			held[ti.Name][a.node] = ti
		}
	}
	if len(held) == 0 && firstErr != nil {
		return nil, firstErr
	}
	out := make([]runtime.TemplateInfo, 0, len(held))
	for _, byNode := range held {
		newest := newestOf(byNode)
		var on []string
		for n, ti := range byNode {
			if newest.Name == "base" || tmplver.Of(ti) == tmplver.Of(newest) {
				on = append(on, n)
			}
		}
		out = append(out, withNodes(newest, on, names(answers)))
	}
	slices.SortFunc(out, func(a, b runtime.TemplateInfo) int {
		if (a.Name == "base") != (b.Name == "base") {
			if a.Name == "base" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// Template is the newest version of the named template, with the nodes
// that hold it.
func (r *Runtime) Template(ctx context.Context, name string) (runtime.TemplateInfo, error) {
	if !movable(name) {
		var on []string
		answers := r.survey(ctx, func(ctx context.Context, t runtime.Templater) ([]runtime.TemplateInfo, error) {
			ti, err := t.Template(ctx, "base")
			return []runtime.TemplateInfo{ti}, err
		})
		for _, a := range answers {
			if a.err == nil {
				on = append(on, a.node)
			}
		}
		if len(on) == 0 {
			return runtime.TemplateInfo{}, fmt.Errorf("%w: no node answers", runtime.ErrUnavailable)
		}
		return withNodes(runtime.BaseTemplate, on, names(answers)), nil
	}
	cp, err := r.copiesOf(ctx, name)
	if err != nil {
		return runtime.TemplateInfo{}, err
	}
	return withNodes(cp.newest, cp.current, cp.asked), nil
}

// CommitTemplate keeps the template on the node of the sandbox it was
// built in; the other nodes drop what they held of that name.
func (r *Runtime) CommitTemplate(ctx context.Context, sandboxID string, t runtime.TemplateInfo) (runtime.TemplateInfo, error) {
	node, err := r.nodeOf(ctx, sandboxID)
	if err != nil {
		return runtime.TemplateInfo{}, err
	}
	rt, err := r.runtimeOf(ctx, node)
	if err != nil {
		return runtime.TemplateInfo{}, err
	}
	tp, ok := rt.(runtime.Templater)
	if !ok {
		return runtime.TemplateInfo{}, fmt.Errorf("%w: node %s keeps no templates", runtime.ErrUnsupported, node)
	}
	l := r.tmplLock(t.Name)
	l.Lock()
	defer l.Unlock()
	out, err := tp.CommitTemplate(ctx, sandboxID, t)
	if err != nil {
		return out, err
	}
	return withNodes(out, []string{node}, r.dropElsewhere(ctx, t.Name, node)), nil
}

// dropElsewhere deletes template name from every node but keep: they
// held an older version of it. It returns the nodes it asked.
func (r *Runtime) dropElsewhere(ctx context.Context, name, keep string) []string {
	answers := r.survey(ctx, func(ctx context.Context, t runtime.Templater) ([]runtime.TemplateInfo, error) {
		return nil, nil
	})
	for _, a := range answers {
		if a.node == keep || a.err != nil {
			if a.err != nil {
				r.o.Logger.Warn("placement: a node that could not be asked may keep an older version of a replaced template",
					"template", name, "node", a.node, "err", a.err)
			}
			continue
		}
		rt, err := r.runtimeOf(ctx, a.node)
		if err == nil {
			err = rt.(runtime.Templater).DeleteTemplate(ctx, name)
		}
		if err != nil && !errors.Is(err, runtime.ErrNotFound) {
			r.o.Logger.Warn("placement: drop an older version of a replaced template", "template", name, "node", a.node, "err", err)
		}
	}
	return names(answers)
}

// DeleteTemplate deletes the template from every node that has it. It
// refuses, deleting nothing, while a node cannot be asked.
func (r *Runtime) DeleteTemplate(ctx context.Context, name string) error {
	l := r.tmplLock(name)
	l.Lock()
	defer l.Unlock()
	cp, err := r.copiesOf(ctx, name)
	if len(cp.unreachable) > 0 {
		return fmt.Errorf("%w: template %s: not deleted, since a node that cannot be reached may hold a copy that would come back with it (%s); delete it again once the node answers, or remove the node",
			runtime.ErrUnavailable, name, strings.Join(cp.unreachable, "; "))
	}
	if err != nil {
		return err
	}
	for _, node := range cp.all {
		rt, err := r.runtimeOf(ctx, node)
		if err == nil {
			err = rt.(runtime.Templater).DeleteTemplate(ctx, name)
		}
		if err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return fmt.Errorf("delete template %s on node %s: %w", name, node, err)
		}
	}
	return nil
}

// ImportImage makes an image template on the local runtime, or with none
// on the least loaded ready node: the control plane pulls a registry's
// image itself (through its egress rules, src.Dial) and sends the node
// the archive, as it sends an uploaded one.
func (r *Runtime) ImportImage(ctx context.Context, t runtime.TemplateInfo, src runtime.ImageSource, progress func(runtime.ImageProgress)) (runtime.TemplateInfo, error) {
	node := runtime.LocalNode
	if _, ok := r.o.Local.(runtime.ImageImporter); !ok || r.o.Local == nil {
		var err error
		if node, err = r.Choose(ctx, runtime.Limits{}, ""); err != nil {
			return t, err
		}
	}
	rt, err := r.runtimeOf(ctx, node)
	if err != nil {
		return t, err
	}
	imp, ok := rt.(runtime.ImageImporter)
	if !ok {
		return t, fmt.Errorf("%w: node %s cannot import images", runtime.ErrUnavailable, node)
	}
	l := r.tmplLock(t.Name)
	l.Lock()
	defer l.Unlock()
	var out runtime.TemplateInfo
	if node != runtime.LocalNode && src.Ref != "" {
		out, err = pullTo(ctx, imp, t, src, progress)
	} else {
		out, err = imp.ImportImage(ctx, t, src, progress)
	}
	if err != nil {
		return out, err
	}
	return withNodes(out, []string{node}, r.dropElsewhere(ctx, t.Name, node)), nil
}

// pullTo pulls src.Ref here and streams it to imp, a node's importer.
func pullTo(ctx context.Context, imp runtime.ImageImporter, t runtime.TemplateInfo, src runtime.ImageSource, progress func(runtime.ImageProgress)) (runtime.TemplateInfo, error) {
	isrc := images.Source{Ref: src.Ref, Username: src.Username, Password: src.Password, Insecure: src.Insecure,
		MaxBytes: src.MaxBytes, Transport: images.DialTransport(src.Dial)}
	report := images.ReportTo(progress)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	saved := make(chan error, 1)
	go func() {
		_, err := images.Save(ctx, isrc, pw, report)
		pw.CloseWithError(err)
		saved <- err
	}()
	out, err := imp.ImportImage(ctx, t, runtime.ImageSource{Archive: pr, Origin: src.Ref, MaxBytes: src.MaxBytes}, nil)
	pr.CloseWithError(errImportEnded)
	cancel()
	serr := <-saved
	if err != nil && serr != nil && !errors.Is(serr, errImportEnded) && !errors.Is(serr, context.Canceled) {
		// The pull failed first, and cut the node's archive short.
		return t, fmt.Errorf("pull %s: %w", src.Ref, images.AsRuntimeError(serr))
	}
	return out, err
}

var errImportEnded = errors.New("the node's import ended")
