package npmreg

import (
	"strconv"
	"strings"
)

// validName reports whether s is an npm package name, "name" or
// "@scope/name", made of URL-safe characters. Request paths are checked with
// it too, so nothing that could climb out of a name ("..", "%2e") gets
// looked up.
func validName(s string) bool {
	scope, name, scoped := strings.Cut(s, "/")
	if !scoped {
		return validPart(s)
	}
	return strings.HasPrefix(scope, "@") && validPart(scope[1:]) && validPart(name)
}

func validPart(s string) bool {
	if s == "" || len(s) > 214 || s[0] == '.' || s[0] == '_' {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}

// semver is a parsed "MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]".
type semver struct {
	core [3]uint64
	pre  []string
}

func parseVersion(s string) (semver, bool) {
	var v semver
	s, _, _ = strings.Cut(s, "+")
	s, pre, hasPre := strings.Cut(s, "-")
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil || (len(p) > 1 && p[0] == '0') {
			return v, false
		}
		v.core[i] = n
	}
	if hasPre {
		v.pre = strings.Split(pre, ".")
		for _, id := range v.pre {
			if id == "" {
				return v, false
			}
		}
	}
	return v, true
}

// compare orders a and b by semver precedence: -1, 0 or +1.
func (a semver) compare(b semver) int {
	for i := range a.core {
		if a.core[i] != b.core[i] {
			return cmpUint(a.core[i], b.core[i])
		}
	}
	// A release outranks its prereleases.
	switch {
	case len(a.pre) == 0 && len(b.pre) == 0:
		return 0
	case len(a.pre) == 0:
		return 1
	case len(b.pre) == 0:
		return -1
	}
	for i := 0; i < len(a.pre) && i < len(b.pre); i++ {
		if c := comparePre(a.pre[i], b.pre[i]); c != 0 {
			return c
		}
	}
	return cmpUint(uint64(len(a.pre)), uint64(len(b.pre)))
}

// comparePre orders prerelease identifiers: numeric ones numerically and
// below alphanumeric ones, which compare as ASCII.
func comparePre(a, b string) int {
	na, errA := strconv.ParseUint(a, 10, 64)
	nb, errB := strconv.ParseUint(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		return cmpUint(na, nb)
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
