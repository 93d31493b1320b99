package npmreg

import (
	"encoding/json"
	"net/http"
	"strings"
)

const abbreviatedType = "application/vnd.npm.install-v1+json"

// abbreviatedFields are the package.json fields an abbreviated ("corgi")
// packument keeps, per the registry's API docs: what install needs.
var abbreviatedFields = []string{
	"name", "version", "deprecated", "bin", "directories", "engines",
	"dependencies", "optionalDependencies", "devDependencies",
	"peerDependencies", "peerDependenciesMeta", "bundleDependencies",
	"bundledDependencies", "os", "cpu", "libc", "_hasShrinkwrap",
}

// installScripts are the lifecycle scripts npm runs on install; a version
// with any of them is marked hasInstallScript in an abbreviated packument.
var installScripts = []string{"preinstall", "install", "postinstall"}

// packageVersions is every version of one package name in the directory.
type packageVersions struct {
	name     string
	versions map[string]*pack
}

// latest is the dist-tag npm installs for a bare name: the highest release,
// or the highest prerelease if there is no release. Prereleases never win
// over a release, so @openai/codex's "0.169.0-linux-x64" leaves latest at
// 0.169.0, as on the public registry.
func (pv *packageVersions) latest() string {
	var best string
	var bestV semver
	for v := range pv.versions {
		sv, _ := parseVersion(v) // checked by readPack
		if best == "" || rank(sv, bestV) > 0 {
			best, bestV = v, sv
		}
	}
	return best
}

func rank(a, b semver) int {
	if (len(a.pre) == 0) != (len(b.pre) == 0) {
		if len(a.pre) == 0 {
			return 1
		}
		return -1
	}
	return a.compare(b)
}

type dist struct {
	Tarball   string `json:"tarball"`
	Integrity string `json:"integrity"`
	Shasum    string `json:"shasum"`
}

func (r *Registry) servePackument(w http.ResponseWriter, req *http.Request, name string) {
	pv := r.packages[name]
	if pv == nil {
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	abbreviated := strings.Contains(req.Header.Get("Accept"), abbreviatedType)
	base := r.baseURL(req)
	versions := map[string]map[string]any{}
	for v, p := range pv.versions {
		versions[v] = versionDoc(p, base, abbreviated)
	}
	doc := map[string]any{
		"name":      name,
		"dist-tags": map[string]string{"latest": pv.latest()},
		"versions":  versions,
	}
	contentType := "application/json"
	if abbreviated {
		contentType = abbreviatedType
	} else {
		doc["_id"] = name
	}
	w.Header().Set("Content-Type", contentType)
	json.NewEncoder(w).Encode(doc) // a write error means the client went away
}

// versionDoc is one entry of a packument's "versions".
func versionDoc(p *pack, base string, abbreviated bool) map[string]any {
	doc := map[string]any{}
	if abbreviated {
		for _, k := range abbreviatedFields {
			if v, ok := p.manifest[k]; ok {
				doc[k] = v
			}
		}
		if hasInstallScript(p) {
			doc["hasInstallScript"] = true
		}
	} else {
		for k, v := range p.manifest {
			doc[k] = v
		}
		doc["_id"] = p.name + "@" + p.version
	}
	doc["dist"] = dist{
		Tarball:   base + tarballPath(p.name, p.version),
		Integrity: p.integrity,
		Shasum:    p.shasum,
	}
	return doc
}

func hasInstallScript(p *pack) bool {
	var scripts map[string]any
	if json.Unmarshal(p.manifest["scripts"], &scripts) != nil {
		return false
	}
	for _, s := range installScripts {
		if _, ok := scripts[s]; ok {
			return true
		}
	}
	return false
}

// baseURL is the absolute URL of the registry root, ending in "/".
func (r *Registry) baseURL(req *http.Request) string {
	if r.base != nil {
		return r.base.String()
	}
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + req.Host + r.prefix
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
