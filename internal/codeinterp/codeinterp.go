// Package codeinterp is the code interpreter behind E2B's Code Interpreter
// SDKs (runCode, contexts): server.py, a small HTTP service over Jupyter
// kernels that runs inside a sandbox as the sandbox user, and the recipe
// of the code-interpreter template that installs it into /usr/local and
// makes it the template's start command. The service ships inside the
// airlock binary (go:embed), so a build needs nothing but the host's
// Debian packages, which sandboxes see through the base template's /usr.
//
// Nothing here runs on the host: the service is only ever started by a
// template's start command, inside a sandbox.
package codeinterp

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlockhq/airlock/client"
)

//go:embed server.py
var server []byte

// Server is the service's source, for tests that run it.
func Server() []byte { return server }

const (
	// Template is the name of the built-in template.
	Template = "code-interpreter"
	// Port is where the SDKs reach the service (their JUPYTER_PORT).
	Port = 49999
	// Dir is where the template keeps the service.
	Dir = "/usr/local/lib/airlock/code-interpreter"
	// Python is the interpreter it runs on: the host's Debian one (its
	// jupyter, ipykernel, matplotlib, pandas and numpy packages).
	Python = "/usr/bin/python3"
	// Packages are the Debian packages the host needs.
	Packages = "python3-ipykernel python3-jupyter-client python3-matplotlib python3-pandas python3-numpy"
)

// BuildHint is the command that builds the template.
const BuildHint = "airlock template build " + Template

// Build returns the template's recipe. The service's files are written to
// dir (a new, empty directory the caller removes after the build), which
// the recipe copies in.
func Build(dir string) (client.TemplateBuild, error) {
	for name, b := range map[string][]byte{"server.py": server, "matplotlib/matplotlibrc": matplotlibrc} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return client.TemplateBuild{}, fmt.Errorf("code interpreter: %w", err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return client.TemplateBuild{}, fmt.Errorf("code interpreter: %w", err)
		}
	}
	// The imports checked, and matplotlib's font cache made once here:
	// without it the first chart of every sandbox waits seconds for a
	// font scan.
	check := fmt.Sprintf(`MPLCONFIGDIR=%s/matplotlib %s -c 'import jupyter_client, ipykernel, matplotlib_inline, pandas, numpy, matplotlib.font_manager' || `+
		`{ echo 'the code interpreter needs Python packages the host lacks: apt-get install %s' >&2; exit 1; }`, Dir, Python, Packages)
	return client.TemplateBuild{
		Name:        Template,
		Description: "E2B Code Interpreter: Python in Jupyter kernels (matplotlib, pandas, numpy) on port 49999",
		Steps: []client.BuildStep{
			{Run: "mkdir -p " + Dir},
			{Copy: &client.CopyStep{Src: dir, Dst: Dir}},
			{Run: check},
		},
		Start: &client.TemplateStart{
			Command:   fmt.Sprintf("exec %s %s/server.py --port %d", Python, Dir, Port),
			ReadyPort: Port,
			// Its first kernel starts before the port opens: seconds on a
			// loaded host.
			ReadyTimeoutS: 120,
		},
	}, nil
}

// matplotlibrc is matplotlib's configuration in the template. Debian's
// matplotlib looks for one in /etc, which sandboxes do not have (the base
// template copies only what commands need of the host's /etc), and fails
// to import without; this one only names the inline backend, which draws
// a figure shown in a kernel as a PNG result.
var matplotlibrc = []byte("backend: module://matplotlib_inline.backend_inline\n")
