package api

import (
	"context"
	"fmt"
	"sort"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// The fake's templates: base plus what was committed, kept in memory.

var fakeTemplates = struct {
	built map[*fakeManager]map[string]runtime.TemplateInfo
}{map[*fakeManager]map[string]runtime.TemplateInfo{}}

func (m *fakeManager) Templates(context.Context) ([]runtime.TemplateInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []runtime.TemplateInfo{{Name: "base", Description: "the host's /usr"}}
	for _, t := range m.templates {
		out = append(out, t)
	}
	sort.Slice(out[1:], func(i, j int) bool { return out[1+i].Name < out[1+j].Name })
	return out, nil
}

func (m *fakeManager) Template(ctx context.Context, name string) (runtime.TemplateInfo, error) {
	ts, _ := m.Templates(ctx)
	for _, t := range ts {
		if t.Name == name {
			return t, nil
		}
	}
	return runtime.TemplateInfo{}, fmt.Errorf("%w: template %q", sandbox.ErrNotFound, name)
}

func (m *fakeManager) CommitTemplate(_ context.Context, c sandbox.Caller, req sandbox.CommitTemplateRequest) (runtime.TemplateInfo, error) {
	if _, err := m.lookup(c, req.SandboxID); err != nil {
		return runtime.TemplateInfo{}, err
	}
	if req.Name == "" || req.Name == "base" {
		return runtime.TemplateInfo{}, fmt.Errorf("%w: template name %q", sandbox.ErrInvalid, req.Name)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.templates == nil {
		m.templates = map[string]runtime.TemplateInfo{}
	}
	t := runtime.TemplateInfo{Name: req.Name, From: "base", Description: req.Description, Labels: req.Labels}
	m.templates[req.Name] = t
	return t, nil
}

func (m *fakeManager) DeleteTemplate(_ context.Context, c sandbox.Caller, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.templates[name]; !ok {
		return fmt.Errorf("%w: template %q", sandbox.ErrNotFound, name)
	}
	delete(m.templates, name)
	return nil
}

func (m *fakeManager) ImportTemplate(_ context.Context, c sandbox.Caller, req sandbox.ImportTemplateRequest, progress func(runtime.ImageProgress)) (runtime.TemplateInfo, error) {
	if req.Name == "" || req.Name == "base" {
		return runtime.TemplateInfo{}, fmt.Errorf("%w: template name %q", sandbox.ErrInvalid, req.Name)
	}
	if progress != nil {
		progress(runtime.ImageProgress{Layer: 1, Layers: 1, Bytes: 10, Total: 10, Done: true})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.templates == nil {
		m.templates = map[string]runtime.TemplateInfo{}
	}
	t := runtime.TemplateInfo{Name: req.Name, From: "image", Image: req.Image, Description: req.Description}
	m.templates[req.Name] = t
	return t, nil
}
