package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/airlockhq/airlock/internal/testenv"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type testKey struct{ pkg, test string }

// skipped is a test that skipped, with the reason it gave.
type skipped struct {
	pkg, test, reason string
}

// report turns go test's events back into its usual output and collects
// the skips.
type report struct {
	w       io.Writer
	verbose bool
	pkgs    map[string][]string  // output of each running package
	tests   map[testKey][]string // output of each running test
	skips   []skipped
}

func newReport(w io.Writer, verbose bool) *report {
	return &report{w: w, verbose: verbose, pkgs: map[string][]string{}, tests: map[testKey][]string{}}
}

func (r *report) line(b []byte) {
	var ev event
	if err := json.Unmarshal(b, &ev); err != nil || ev.Action == "" {
		fmt.Fprintln(r.w, string(b)) // not an event: pass it on
		return
	}
	switch ev.Action {
	case "build-output":
		fmt.Fprint(r.w, ev.Output)
		return
	case "build-fail":
		return
	}
	k := testKey{ev.Package, ev.Test}
	if ev.Output != "" {
		if r.verbose {
			fmt.Fprint(r.w, ev.Output)
		} else {
			r.pkgs[ev.Package] = append(r.pkgs[ev.Package], ev.Output)
		}
		if ev.Test != "" {
			r.tests[k] = append(r.tests[k], ev.Output)
		}
	}
	if ev.Test != "" {
		switch ev.Action {
		case "skip":
			r.skips = append(r.skips, skipped{ev.Package, ev.Test, reason(r.tests[k])})
			delete(r.tests, k)
		case "pass", "fail":
			delete(r.tests, k)
		}
		return
	}
	switch ev.Action {
	case "pass", "skip", "fail":
		// The package is done: go test shows a passing one's last line
		// ("ok ..." or "? ... [no test files]") and all of a failing one.
		out := r.pkgs[ev.Package]
		delete(r.pkgs, ev.Package)
		if r.verbose || len(out) == 0 {
			return
		}
		if ev.Action == "fail" {
			fmt.Fprint(r.w, strings.Join(out, ""))
			return
		}
		fmt.Fprint(r.w, out[len(out)-1])
	}
}

// reason is what a skipped test said, without the lines go test frames it
// with.
func reason(out []string) string {
	var parts []string
	for _, l := range out {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		parts = append(parts, l)
	}
	return strings.Join(parts, " ")
}

// summary lists every skipped test, the host's lacks first.
func (r *report) summary() {
	if len(r.skips) == 0 {
		return
	}
	slices.SortStableFunc(r.skips, func(a, b skipped) int {
		return strings.Compare(a.pkg+" "+a.test, b.pkg+" "+b.test)
	})
	fmt.Fprintf(r.w, "\n%d test%s skipped:\n", len(r.skips), plural(len(r.skips)))
	for _, s := range r.skips {
		fmt.Fprintf(r.w, "  %s %s: %s\n", short(s.pkg), s.test, s.reason)
	}
}

// forbidden counts the skips CI must not have: all but the host's lacks.
func (r *report) forbidden() int {
	n := 0
	for _, s := range r.skips {
		if !strings.Contains(s.reason, testenv.UnsupportedPrefix) {
			n++
		}
	}
	return n
}

// short is a package's path inside the module.
func short(pkg string) string {
	return strings.TrimPrefix(strings.TrimPrefix(pkg, "github.com/airlockhq/airlock"), "/")
}
