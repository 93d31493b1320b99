package tasks

import (
	"path"
	"strings"
)

const maxStars = 4

// validGlob accepts an artifact pattern: a workspace-relative path.Match
// pattern whose segments may also be "**" (any number of directories).
func validGlob(g string) error {
	if g == "" || len(g) > 1024 || strings.HasPrefix(g, "/") || strings.ContainsRune(g, 0) {
		return invalid("artifact pattern %.60q: want a workspace-relative pattern of 1..1024 bytes", g)
	}
	// Each ** multiplies the matcher's work by a path's depth.
	if strings.Count("/"+g+"/", "/**/") > maxStars {
		return invalid("artifact pattern %.60q: at most %d ** segments", g, maxStars)
	}
	for _, seg := range strings.Split(g, "/") {
		if seg == ".." {
			return invalid("artifact pattern %.60q: .. leaves the workspace", g)
		}
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return invalid("artifact pattern %.60q: %v", g, err)
		}
	}
	return nil
}

// matchGlob reports whether the slash-separated relative name matches
// pattern, where a "**" segment matches zero or more directories.
func matchGlob(pattern, name string) bool {
	return matchSegs(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			// Collapse runs of ** so the search stays linear in depth.
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			for i := 0; i <= len(name); i++ {
				if matchSegs(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
