package api

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMethodNotAllowedListsEveryMethod: for every path of the route table
// and every method it does not serve, the answer is a 405 whose Allow
// header (and message) lists exactly the methods the table serves there,
// HEAD wherever GET is, in one order.
func TestMethodNotAllowedListsEveryMethod(t *testing.T) {
	e := newEnv(t)
	order := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}
	param := regexp.MustCompile(`\{[^}]+\}`)
	tried := 0
	for _, rt := range routes {
		path := param.ReplaceAllString(rt.path, "x1")
		served := map[string]bool{}
		for _, other := range routes {
			if patternMatches(other.path, path) {
				served[other.method] = true
			}
		}
		if served["GET"] {
			served["HEAD"] = true
		}
		var want []string
		for _, m := range order {
			if served[m] {
				want = append(want, m)
			}
		}
		for _, m := range append(slices.Clone(order), "OPTIONS", "BREW") {
			if served[m] {
				continue
			}
			tried++
			a := e.do(call{method: m, path: path})
			allow := strings.Join(want, ", ")
			if a.status != 405 {
				t.Errorf("%s %s: %d %s; want 405", m, path, a.status, a.body)
				continue
			}
			if d := cmp.Diff(allow, a.header.Get("Allow")); d != "" {
				t.Errorf("%s %s: Allow (-want +got):\n%s", m, path, d)
			}
			if m == "HEAD" {
				continue // an answer to HEAD has no body
			}
			if code, msg := a.errCode(); code != codeMethodNotAllowed || !strings.HasSuffix(msg, "allowed: "+allow) {
				t.Errorf("%s %s: %s %q; want %s listing %s", m, path, code, msg, codeMethodNotAllowed, allow)
			}
		}
	}
	if tried < len(routes) {
		t.Fatalf("only %d requests tried for %d routes", tried, len(routes))
	}
}

// patternMatches says whether the mux pattern's path (segments, {name}
// wildcards, a trailing slash for a subtree) matches path.
func patternMatches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	subtree := strings.HasSuffix(pattern, "/")
	if subtree {
		ps = ps[:len(ps)-1]
		if len(xs) <= len(ps) {
			return false
		}
		xs = xs[:len(ps)]
	}
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if ps[i] != xs[i] && !(strings.HasPrefix(ps[i], "{") && xs[i] != "") {
			return false
		}
	}
	return true
}
