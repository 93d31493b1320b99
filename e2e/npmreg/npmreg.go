// Package npmreg serves the npm tarballs in one directory over the npm
// registry protocol, so end-to-end tests can run the real `npm install`
// with no route to registry.npmjs.org. It only ever serves those files: it
// never fetches, proxies or redirects, so a test that passes against it has
// shown that npm needed nothing else.
//
// Routes, under a prefix ("/npm/" unless the Prefix or BaseURL option says
// otherwise; mount the Registry at that prefix without stripping it):
//
//	GET <prefix><name>              packument; <name> is "pkg", "@scope/pkg"
//	                                or "@scope%2fpkg" (npm sends the last)
//	GET <prefix><name>/-/<file>.tgz tarball, "<pkg>-<version>.tgz"
//
// A packument is abbreviated when Accept asks for
// application/vnd.npm.install-v1+json, as npm install does. Anything else,
// including a package or version not in the directory, is a 404 with body
// {"error":"Not found"}, as the public registry answers; npm treats that as a
// failed optional dependency and skips it.
package npmreg

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// Request is one request the Registry answered.
type Request struct {
	Method string
	Path   string // as sent, still escaped: "/npm/@openai%2fcodex"
	Status int
}

// Registry is an http.Handler serving the packages of one directory. It is
// immutable after New apart from its request log, and safe for concurrent
// use.
type Registry struct {
	prefix string   // path prefix, starts and ends with "/"
	base   *url.URL // if set, tarball URLs start with it

	packages map[string]*packageVersions // by name
	tarballs map[string]*pack            // by "<name>/-/<file>.tgz"

	mu       sync.Mutex
	requests []Request
}

// Option configures New.
type Option func(*Registry) error

// Prefix sets the path the Registry is mounted at (default "/npm/"). Tarball
// URLs are then built from each request: http or https (as the connection
// was), its Host header, prefix. Use BaseURL instead when a proxy in front
// terminates TLS or rewrites Host.
func Prefix(p string) Option {
	return func(r *Registry) error {
		if !strings.HasPrefix(p, "/") || !strings.HasSuffix(p, "/") {
			return fmt.Errorf("prefix %q must start and end with /", p)
		}
		r.prefix = p
		return nil
	}
}

// BaseURL fixes the absolute URL the Registry is reachable at, such as
// "https://allowed.test/npm/"; tarball URLs start with it whatever the
// request said, and its path is the prefix.
func BaseURL(base string) Option {
	return func(r *Registry) error {
		u, err := url.Parse(base)
		if err != nil {
			return fmt.Errorf("base URL: %w", err)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || !strings.HasSuffix(u.Path, "/") {
			return fmt.Errorf("base URL %q: want http(s)://host/path/", base)
		}
		r.base, r.prefix = u, u.Path
		return nil
	}
}

// New reads every *.tgz in dir (not recursively). Two tarballs of the same
// name and version are an error, as is one without a valid package.json.
func New(dir string, opts ...Option) (*Registry, error) {
	r := &Registry{
		prefix:   "/npm/",
		packages: map[string]*packageVersions{},
		tarballs: map[string]*pack{},
	}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, err
		}
	}
	packs, err := readPacks(files)
	if err != nil {
		return nil, err
	}
	for _, p := range packs {
		if err := r.add(p); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// readPacks reads files in parallel: a platform package puts package.json
// after a ~300 MB binary, so each takes seconds to inflate (a minute under
// -race).
func readPacks(files []string) ([]*pack, error) {
	packs := make([]*pack, len(files))
	errs := make([]error, len(files))
	sem := make(chan struct{}, max(runtime.GOMAXPROCS(0), 2))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			packs[i], errs[i] = readPack(f)
		})
	}
	wg.Wait()
	return packs, errors.Join(errs...)
}

func (r *Registry) add(p *pack) error {
	pv := r.packages[p.name]
	if pv == nil {
		pv = &packageVersions{name: p.name, versions: map[string]*pack{}}
		r.packages[p.name] = pv
	}
	if old := pv.versions[p.version]; old != nil {
		return fmt.Errorf("%s@%s is in both %s and %s", p.name, p.version, old.file, p.file)
	}
	pv.versions[p.version] = p
	r.tarballs[tarballPath(p.name, p.version)] = p
	return nil
}

// tarballPath is where the public registry keeps a tarball, relative to
// its root: "@openai/codex/-/codex-0.169.0.tgz".
func tarballPath(name, version string) string {
	_, bare, scoped := strings.Cut(name, "/")
	if !scoped {
		bare = name
	}
	return name + "/-/" + bare + "-" + version + ".tgz"
}

// Requests returns the requests answered so far, oldest first.
func (r *Registry) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	r.serve(sw, req)
	r.mu.Lock()
	r.requests = append(r.requests, Request{Method: req.Method, Path: req.URL.EscapedPath(), Status: sw.status})
	r.mu.Unlock()
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed")
		return
	}
	name, tarball, ok := parsePath(r.prefix, req.URL.Path)
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "Not found")
	case tarball != "":
		r.serveTarball(w, req, name+"/-/"+tarball)
	default:
		r.servePackument(w, req, name)
	}
}

// parsePath splits a decoded request path into a package name and, for a
// tarball, its file name. ok is false for anything that is neither.
func parsePath(prefix, p string) (name, tarball string, ok bool) {
	rest, found := strings.CutPrefix(p, prefix)
	if !found {
		return "", "", false
	}
	name, tarball, isTarball := strings.Cut(rest, "/-/")
	if !validName(name) {
		return "", "", false
	}
	if isTarball && (!strings.HasSuffix(tarball, ".tgz") || !validPart(tarball)) {
		return "", "", false
	}
	return name, tarball, true
}

func (r *Registry) serveTarball(w http.ResponseWriter, req *http.Request, key string) {
	p := r.tarballs[key]
	if p == nil {
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	f, err := os.Open(p.file)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, req, "", fi.ModTime(), f)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
