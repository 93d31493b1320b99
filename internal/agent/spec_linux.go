package agent

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// defaultPath is used when neither the sandbox nor the request sets PATH.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// execSpec is a validated exec request, ready for ForkExec.
type execSpec struct {
	path    string
	argv    []string
	env     []string
	dir     string
	timeout time.Duration
}

func (s *server) prepare(req Request) (execSpec, error) {
	var sp execSpec
	switch {
	case len(req.Argv) > 0 && req.Shell != "":
		return sp, errorf(CodeInvalid, "exec: set argv or shell, not both")
	case len(req.Argv) > 0:
		sp.argv = req.Argv
	case req.Shell != "":
		sp.argv = []string{"/bin/sh", "-c", req.Shell}
	default:
		return sp, errorf(CodeInvalid, "exec: argv or shell is required")
	}
	if sp.argv[0] == "" {
		return sp, errorf(CodeInvalid, "exec: empty argv[0]")
	}
	for _, a := range sp.argv {
		if strings.IndexByte(a, 0) >= 0 {
			return sp, errorf(CodeInvalid, "exec: NUL byte in argument")
		}
	}
	if req.TimeoutMS < 0 {
		return sp, errorf(CodeInvalid, "exec: negative timeout")
	}
	sp.timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	env, err := mergeEnv(s.cfg.Env, req.Env)
	if err != nil {
		return sp, err
	}
	sp.env = env
	sp.dir = s.cfg.Workdir
	if req.Cwd != "" {
		if strings.IndexByte(req.Cwd, 0) >= 0 {
			return sp, errorf(CodeInvalid, "exec: NUL byte in cwd")
		}
		sp.dir = req.Cwd
		if !filepath.IsAbs(sp.dir) {
			sp.dir = filepath.Join(s.cfg.Workdir, sp.dir)
		}
	}
	pathEnv, hasPath := envValue(sp.env, "PATH")
	sp.path, err = lookPath(sp.argv[0], pathEnv, hasPath, sp.dir)
	return sp, err
}

// mergeEnv lays over on base; the request wins. The result is sorted so
// the child sees a stable order.
func mergeEnv(base []string, over map[string]string) ([]string, error) {
	m := map[string]string{}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k != "" {
			m[k] = v
		}
	}
	for k, v := range over {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return nil, errorf(CodeInvalid, "exec: bad environment variable %q", k)
		}
		m[k] = v
	}
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env, nil
}

func envValue(env []string, key string) (string, bool) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// lookPath finds name in the PATH of the process's own environment, not the
// agent's: the sandbox decides where its programs live.
func lookPath(name, pathEnv string, hasPath bool, dir string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	if !hasPath {
		pathEnv = defaultPath
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errorf(CodeNotFound, "exec: %q not found in PATH", name)
}
