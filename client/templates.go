package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"
)

// Template is a root file system sandboxes can be created from: base (the
// host's /usr), or one built on it with BuildTemplate.
type Template struct {
	Name        string            `json:"name"`
	From        string            `json:"from,omitempty"`
	Description string            `json:"description,omitempty"`
	CreatedAt   time.Time         `json:"created_at,omitzero"`
	SizeBytes   int64             `json:"size_bytes"`
	Labels      map[string]string `json:"labels,omitempty"`
	// Image, Digest, Env, Workdir and User are an imported image's.
	Image   string   `json:"image,omitempty"`
	Digest  string   `json:"digest,omitempty"`
	Env     []string `json:"env,omitempty"`
	Workdir string   `json:"workdir,omitempty"`
	User    string   `json:"user,omitempty"`
	// Start is what every sandbox made from the template runs.
	Start *TemplateStart `json:"start,omitempty"`
	// Nodes hold the template, on a server with nodes ("local" is its
	// own host); a sandbox placed elsewhere gets a copy first.
	Nodes []string `json:"nodes,omitempty"`
}

// TemplateStart is a template's start command: a service run in the
// background as the sandbox user in every sandbox made from the
// template. Creating one returns once ReadyPort accepts connections and
// ReadyCommand exits 0 (those set), or fails with the end of the
// command's stderr after ReadyTimeoutS (default 60).
type TemplateStart struct {
	Command       string `json:"command"`
	ReadyPort     int    `json:"ready_port,omitempty"`
	ReadyCommand  string `json:"ready_command,omitempty"`
	ReadyTimeoutS int    `json:"ready_timeout_s,omitempty"`
}

// Templates lists the server's templates, base first.
func (c *Client) Templates(ctx context.Context) ([]Template, error) {
	var out struct {
		Templates []Template `json:"templates"`
	}
	err := c.doJSON(ctx, http.MethodGet, "/v1/templates", nil, nil, &out)
	return out.Templates, err
}

// Template returns one template.
func (c *Client) Template(ctx context.Context, name string) (Template, error) {
	var t Template
	err := c.doJSON(ctx, http.MethodGet, "/v1/templates/"+url.PathEscape(name), nil, nil, &t)
	return t, err
}

// CommitTemplateRequest saves what a build sandbox (CreateRequest.Build)
// put in /usr/local as the template Name. Admin keys only.
type CommitTemplateRequest struct {
	Name        string            `json:"name"`
	SandboxID   string            `json:"sandbox_id"`
	Description string            `json:"description,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	// Start: nil keeps the start command of the template the build was
	// made from; an empty one means none.
	Start *TemplateStart `json:"start,omitempty"`
}

// CommitTemplate saves a build sandbox as a template and deletes the
// sandbox (its processes end before its files are read).
func (c *Client) CommitTemplate(ctx context.Context, req CommitTemplateRequest) (Template, error) {
	var t Template
	err := c.doJSON(ctx, http.MethodPost, "/v1/templates", nil, req, &t)
	return t, err
}

// DeleteTemplate removes a built template (admin keys only); sandboxes
// running on it keep it until they end.
func (c *Client) DeleteTemplate(ctx context.Context, name string) error {
	return c.doJSON(ctx, http.MethodDelete, "/v1/templates/"+url.PathEscape(name), nil, nil, nil)
}

// TemplateBuild is a recipe for a template: steps run in order in a build
// sandbox on From, whose /usr/local is then saved. Only /usr/local is kept
// (npm install -g, pip install --prefix /usr/local, make install); files
// put anywhere else serve the build only.
type TemplateBuild struct {
	Name        string
	From        string // default base
	Description string
	Steps       []BuildStep
	Env         map[string]string // the build sandbox's environment
	// Network is the build's egress policy (for example AllowOnly of the
	// package registry); nil: no network.
	Network  *NetworkPolicy
	CPUs     float64
	MemoryMB int64         // default 2048
	DiskMB   int64         // default 4096: installs and their caches are large
	Timeout  time.Duration // the whole build; default 30 min
	// Force rebuilds even when a template of the name was built from the
	// same recipe.
	Force bool
	// Start is what every sandbox made from the template runs (nil: the
	// From template's, if it has one).
	Start *TemplateStart
}

// BuildStep is one step: Run (a shell command, run as the sandbox user in
// /home/user) or Copy (a local file or directory into the sandbox).
type BuildStep struct {
	Run  string
	Copy *CopyStep
}

// CopyStep copies Src, a local file or directory, to Dst, an absolute path
// in the build sandbox. Modes are kept; symlinks are recreated.
type CopyStep struct {
	Src, Dst string
}

// RecipeLabel is the label a built template keeps its recipe's digest in.
const RecipeLabel = "airlock.recipe"

// BuildTemplate builds b.Name unless a template of that name was built
// from the same recipe (steps, copied files' contents, environment,
// network, and the From template's own build), in which case it returns
// that template and cached true. Steps' output goes to log (nil: discard).
// The build sandbox is destroyed however the build ends.
func (c *Client) BuildTemplate(ctx context.Context, b TemplateBuild, log io.Writer) (t Template, cached bool, err error) {
	if log == nil {
		log = io.Discard
	}
	if b.From == "" {
		b.From = "base"
	}
	if b.Name == "" || len(b.Steps) == 0 && b.Start == nil {
		return t, false, errors.New("build template: a name and at least one step (or a start command) are needed")
	}
	for i, s := range b.Steps {
		if (s.Run == "") == (s.Copy == nil) {
			return t, false, fmt.Errorf("build template: step %d must be one of run and copy", i+1)
		}
		if s.Copy != nil && !path.IsAbs(s.Copy.Dst) {
			return t, false, fmt.Errorf("build template: step %d: copy destination %q must be absolute", i+1, s.Copy.Dst)
		}
	}
	from, err := c.Template(ctx, b.From)
	if err != nil {
		return t, false, fmt.Errorf("build template: from %s: %w", b.From, err)
	}
	digest, err := recipeDigest(b, from)
	if err != nil {
		return t, false, fmt.Errorf("build template: %w", err)
	}
	if !b.Force {
		if old, err := c.Template(ctx, b.Name); err == nil && old.Labels[RecipeLabel] == digest {
			return old, true, nil
		}
	}
	if b.MemoryMB == 0 {
		b.MemoryMB = 2048
	}
	if b.DiskMB == 0 {
		b.DiskMB = 4096
	}
	if b.Timeout == 0 {
		b.Timeout = 30 * time.Minute
	}
	sb, err := c.CreateSandbox(ctx, CreateRequest{
		Template: b.From, Build: true, CPUs: b.CPUs, MemoryMB: b.MemoryMB, DiskMB: b.DiskMB,
		Timeout: b.Timeout, Env: b.Env, Network: b.Network,
		Metadata: map[string]string{"airlock.template-build": b.Name},
	})
	if err != nil {
		return t, false, fmt.Errorf("build template: create build sandbox: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		// A commit deleted it already.
		var ae *Error
		if derr := c.DeleteSandbox(dctx, sb.ID); derr != nil && err == nil && !(errors.As(derr, &ae) && ae.Status == http.StatusNotFound) {
			err = fmt.Errorf("build template: delete build sandbox: %w", derr)
		}
	}()
	for i, s := range b.Steps {
		if s.Copy != nil {
			fmt.Fprintf(log, "step %d/%d: copy %s %s\n", i+1, len(b.Steps), s.Copy.Src, s.Copy.Dst)
			if err := c.copyIn(ctx, sb.ID, s.Copy.Src, s.Copy.Dst); err != nil {
				return t, false, fmt.Errorf("build template: step %d: %w", i+1, err)
			}
			continue
		}
		fmt.Fprintf(log, "step %d/%d: run %s\n", i+1, len(b.Steps), s.Run)
		res, err := c.ExecStream(ctx, sb.ID, ExecRequest{Command: s.Run}, log, log)
		if err != nil {
			return t, false, fmt.Errorf("build template: step %d: %w", i+1, err)
		}
		if res.ExitCode != 0 {
			return t, false, fmt.Errorf("build template: step %d (%s) exited %d", i+1, s.Run, res.ExitCode)
		}
	}
	t, err = c.CommitTemplate(ctx, CommitTemplateRequest{
		Name: b.Name, SandboxID: sb.ID, Description: b.Description,
		Labels: map[string]string{RecipeLabel: digest}, Start: b.Start,
	})
	if err != nil {
		return t, false, fmt.Errorf("build template: save: %w", err)
	}
	return t, false, nil
}

// recipeDigest hashes everything a build's result depends on that the
// client can see: the From template (its name and when it was built), the
// steps with the contents of what they copy, the environment and network.
func recipeDigest(b TemplateBuild, from Template) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	enc.Encode(struct {
		From      string
		FromBuilt time.Time
		Env       map[string]string
		Network   *NetworkPolicy
	}{from.Name, from.CreatedAt, b.Env, b.Network})
	if b.Start != nil {
		// Only when set, so recipes without one keep their digests.
		enc.Encode(b.Start)
	}
	for _, s := range b.Steps {
		if s.Run != "" {
			enc.Encode([]string{"run", s.Run})
			continue
		}
		enc.Encode([]string{"copy", s.Copy.Dst})
		err := filepath.WalkDir(s.Copy.Src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(s.Copy.Src, p)
			enc.Encode([]string{rel, info.Mode().String()})
			switch {
			case info.Mode()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				enc.Encode(target)
			case info.Mode().IsRegular():
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer f.Close()
				if _, err := io.Copy(h, f); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("copy %s: %w", s.Copy.Src, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copyIn copies a local file or directory tree to dst in the sandbox.
func (c *Client) copyIn(ctx context.Context, id, src, dst string) error {
	var links [][2]string // target, path
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := path.Join(dst, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return c.Mkdir(ctx, id, to, info.Mode().Perm())
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			links = append(links, [2]string{target, to})
		case info.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := c.WriteFile(ctx, id, to, f, info.Mode().Perm()); err != nil {
				return fmt.Errorf("copy %s: %w", p, err)
			}
		default:
			return fmt.Errorf("copy %s: not a file, directory or symlink", p)
		}
		return nil
	})
	if err != nil || len(links) == 0 {
		return err
	}
	// The file API makes no symlinks: ln does, as the sandbox user.
	sort.Slice(links, func(i, j int) bool { return links[i][1] < links[j][1] })
	argv := []string{"sh", "-c", `while [ $# -gt 0 ]; do ln -sfn -- "$1" "$2" || exit 1; shift 2; done`, "sh"}
	for _, l := range links {
		argv = append(argv, l[0], l[1])
	}
	res, err := c.Exec(ctx, id, ExecRequest{Cmd: argv})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("make symlinks: %s", res.Stderr)
	}
	return nil
}
