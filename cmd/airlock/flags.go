package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// aliasUsage starts the usage of a flag that is another's old name
// (--state-dir for --data-dir): it parses like the new one and stays out
// of --help, so that each thing is documented under one name.
const aliasUsage = "old name of --"

// aliasFlag makes --old set what --name sets.
func aliasFlag(fs *flag.FlagSet, old, name string) {
	fs.Var(fs.Lookup(name).Value, old, aliasUsage+name)
}

// dataDirFlag registers --data-dir (and its old name --state-dir) with
// default def, and returns where the value lands. Every verb that takes a
// data dir registers it this way, so the two names stay one flag.
func dataDirFlag(fs *flag.FlagSet, def, usage string) *string {
	p := fs.String("data-dir", def, usage)
	aliasFlag(fs, "state-dir", "data-dir")
	return p
}

// flagSet is one verb's flags, with a usage that starts with text and
// lists the flags (aliases left out).
func flagSet(name, text string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), text)
		printFlags(fs)
	}
	return fs
}

// printFlags is fs.PrintDefaults without the aliases.
func printFlags(fs *flag.FlagSet) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	shown.SetOutput(fs.Output())
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Usage, aliasUsage) {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	shown.PrintDefaults()
}

// parseFlags parses args into fs. -h or --help prints the usage to stdout
// and ends the command with status 0 (help asked for is not an error); a
// bad flag prints the error and the usage to stderr and ends it with
// status 2, and so does a value out of its range (see rangeChecker),
// before the command sends any request.
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {} // the flag package would print it on -h, to stderr
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(os.Stdout)
		fs.Usage()
		return exitError(0)
	case err != nil:
		fs.Usage()
		return exitError(2)
	}
	return checkRanges(fs)
}

// rangeChecker is a flag value that can be well-formed and still out of
// the range its verb accepts (--timeout 48h, --pids 0).
type rangeChecker interface {
	checkRange(name string) error
}

// checkRanges checks the flags that were given; one out of its range is
// a usage error.
func checkRanges(fs *flag.FlagSet) error {
	var bad error
	fs.Visit(func(f *flag.Flag) {
		if rc, ok := f.Value.(rangeChecker); ok && bad == nil {
			bad = rc.checkRange(f.Name)
		}
	})
	if bad != nil {
		fmt.Fprintf(os.Stderr, "airlock %s: %v\n", fs.Name(), bad)
		return exitError(2)
	}
	return nil
}

// badInput ends verb with status 2, the status of a usage error, saying
// what is wrong with what was given: nothing was sent.
func badInput(verb string, format string, a ...any) error {
	fmt.Fprintf(os.Stderr, "airlock %s: %s\n", verb, fmt.Sprintf(format, a...))
	return exitError(2)
}
