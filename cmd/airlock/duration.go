package main

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// durationSyntax is the one duration syntax of every flag and argument of
// the CLI, and of the console's create form (web/src/duration.js, whose
// parser is diffed against Go's): Go's time.ParseDuration, never negative.
const durationSyntax = "a Go duration: numbers each with a unit h, m, s, ms, us or ns (90s, 10m, 1h30m, 1.5h)"

// bareNumber is a number without a unit, which time.ParseDuration
// refuses with a message that does not say what to write instead.
var bareNumber = regexp.MustCompile(`^[0-9]*\.?[0-9]+$`)

// parseDuration reads durationSyntax.
func parseDuration(s string) (time.Duration, error) {
	if bareNumber.MatchString(s) && s != "0" {
		return 0, fmt.Errorf("%q has no unit: write %ss", s, s)
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration: want %s", s, durationSyntax)
	case d < 0:
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// durationFlag is a duration flag in durationSyntax with the range its
// verb accepts: given explicitly, it must be at least min (0 too) and, if
// max is set, at most max.
type durationFlag struct {
	p        *time.Duration
	raw      string
	min, max time.Duration
}

// durationVar registers a durationFlag; the value lands in *p.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, def, min, max time.Duration, usage string) {
	*p = def
	fs.Var(&durationFlag{p: p, min: min, max: max}, name, usage)
}

// duration is durationVar into a new variable.
func duration(fs *flag.FlagSet, name string, def, min, max time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	durationVar(fs, p, name, def, min, max, usage)
	return p
}

func (f *durationFlag) String() string {
	if f == nil || f.p == nil || *f.p == 0 {
		return ""
	}
	return shortDuration(*f.p)
}

func (f *durationFlag) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*f.p, f.raw = d, s
	return nil
}

func (f *durationFlag) checkRange(name string) error {
	return checkDuration("--"+name+" "+f.raw, *f.p, f.min, f.max)
}

// checkDuration says what is wrong with d, given as what, for the range
// [min, max] (max 0: none).
func checkDuration(what string, d, min, max time.Duration) error {
	switch {
	case d < min:
		return fmt.Errorf("%s is shorter than the %s minimum", what, shortDuration(min))
	case max > 0 && d > max:
		return fmt.Errorf("%s is longer than the %s maximum", what, shortDuration(max))
	}
	return nil
}

// shortDuration writes d without zero units: 24h, 1h30m, 90s as 1m30s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
