package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/airlockhq/airlock/internal/runtime"
)

// CommitTemplateRequest is POST /v1/templates: save what a build sandbox
// (created with build: true) put in /usr/local as the template Name.
type CommitTemplateRequest struct {
	Name      string `json:"name"`
	SandboxID string `json:"sandbox_id"`
	// Description and Labels are kept with the template; a builder can
	// keep a digest of its recipe in a label to know when to rebuild.
	Description string            `json:"description,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	// Start is run in every sandbox made from the template; nil keeps
	// the start command of the template the build sandbox was made from,
	// an empty one ({}) means none.
	Start *runtime.TemplateStart `json:"start,omitempty"`
}

// maxTemplateDescription bounds a template's description; its labels
// have the bounds of a sandbox's metadata.
const maxTemplateDescription = 1024

// Templates lists the runtime's templates; a runtime without built
// templates has base only.
func (s *Service) Templates(ctx context.Context) ([]runtime.TemplateInfo, error) {
	if t, ok := s.rt.(runtime.Templater); ok {
		return t.Templates(ctx)
	}
	return []runtime.TemplateInfo{runtime.BaseTemplate}, nil
}

// Template returns the template called name, ErrNotFound if there is none.
func (s *Service) Template(ctx context.Context, name string) (runtime.TemplateInfo, error) {
	if t, ok := s.rt.(runtime.Templater); ok {
		info, err := t.Template(ctx, name)
		return info, templateErr(err)
	}
	if name != "base" {
		return runtime.TemplateInfo{}, fmt.Errorf("%w: template %q", ErrNotFound, name)
	}
	return runtime.BaseTemplate, nil
}

// HasTemplate says whether sandboxes can be created from the template.
func (s *Service) HasTemplate(ctx context.Context, name string) bool {
	_, err := s.Template(ctx, name)
	return err == nil
}

// CommitTemplate saves an admin's build sandbox as a template. The
// sandbox's processes end before its files are read, so the sandbox is
// deleted whatever the outcome, unless the request was refused first.
func (s *Service) CommitTemplate(ctx context.Context, c Caller, req CommitTemplateRequest) (runtime.TemplateInfo, error) {
	if !c.Admin {
		return runtime.TemplateInfo{}, fmt.Errorf("%w: only an admin key can save templates", ErrInvalid)
	}
	if len(req.Description) > maxTemplateDescription {
		return runtime.TemplateInfo{}, fmt.Errorf("%w: description is longer than %d bytes", ErrInvalid, maxTemplateDescription)
	}
	if err := validMetadata(req.Labels); err != nil {
		return runtime.TemplateInfo{}, fmt.Errorf("labels: %w", err)
	}
	if err := validStart(req.Start); err != nil {
		return runtime.TemplateInfo{}, err
	}
	tr, ok := s.rt.(runtime.Templater)
	if !ok {
		return runtime.TemplateInfo{}, fmt.Errorf("%w: this runtime cannot keep templates", ErrUnavailable)
	}
	rec, _, err := s.live(ctx, c, req.SandboxID)
	if err != nil {
		return runtime.TemplateInfo{}, err
	}
	start := orNone(req.Start)
	if req.Start == nil {
		// A template built on one with a service runs that service too.
		if start, err = s.templateStart(ctx, rec, false); err != nil {
			return runtime.TemplateInfo{}, err
		}
	}
	info, err := tr.CommitTemplate(ctx, req.SandboxID, runtime.TemplateInfo{Name: req.Name, Description: req.Description, Labels: req.Labels, Start: start})
	if err == nil || !errors.Is(err, runtime.ErrInvalid) && !errors.Is(err, runtime.ErrNotFound) {
		if derr := s.Delete(context.WithoutCancel(ctx), c, req.SandboxID); derr != nil && !errors.Is(derr, ErrNotFound) {
			s.log.Error("delete committed build sandbox", "sandbox", req.SandboxID, "err", derr)
		}
	}
	return info, templateErr(err)
}

// DeleteTemplate removes a built template; sandboxes running on it keep
// it until they end.
func (s *Service) DeleteTemplate(ctx context.Context, c Caller, name string) error {
	if !c.Admin {
		return fmt.Errorf("%w: only an admin key can delete templates", ErrInvalid)
	}
	if name == "base" {
		return fmt.Errorf("%w: the base template cannot be deleted", ErrInvalid)
	}
	tr, ok := s.rt.(runtime.Templater)
	if !ok {
		return fmt.Errorf("%w: template %q", ErrNotFound, name)
	}
	return templateErr(tr.DeleteTemplate(ctx, name))
}

// templateErr maps a runtime's error for what a node keeps besides
// sandboxes (templates, volumes) to the domain's kinds.
func templateErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, runtime.ErrConflict):
		return fmt.Errorf("%w: %s", ErrConflict, strings.TrimPrefix(err.Error(), runtime.ErrConflict.Error()+": "))
	case errors.Is(err, runtime.ErrInvalid):
		return fmt.Errorf("%w: %s", ErrInvalid, strings.TrimPrefix(err.Error(), runtime.ErrInvalid.Error()+": "))
	case errors.Is(err, runtime.ErrNotFound):
		return fmt.Errorf("%w: %s", ErrNotFound, strings.TrimPrefix(err.Error(), runtime.ErrNotFound.Error()+": "))
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}
