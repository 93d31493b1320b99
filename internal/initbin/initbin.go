// Package initbin holds the sandbox init program (cmd/airlock-init) inside
// the airlock binary, so the binary stays one file and each sandbox starts
// a small program instead of the whole daemon. `go generate
// ./internal/initbin` builds it into bin/ and writes embed_generated.go,
// which embeds it (the README's build command and the test runner do);
// a binary built without them has none and the runtime falls back to
// executing itself, slower, and says so. It must never hand out the
// program in a form a sandbox could write to: the runtime executes it
// from a sealed memfd.
package initbin

import "unsafe"

//go:generate go run ./gen

// program is the init program, set by embed_generated.go's init when
// this binary embeds it.
var program string

// Name is the init program's file name under bin/.
const Name = "airlock-init"

// Program returns the embedded init program, "" when this binary was
// built without it. It is the binary's own read-only data: not a copy.
func Program() string { return program }

// Addr is where Program's bytes lie in this process's memory, to find
// them in its executable (reading them through the mapping would fault
// every page in).
func Addr() uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(program))) }

// BuildArgs are go's arguments that build the init program into out:
// static (with CGO_ENABLED=0 in the environment), stripped and
// reproducible, with no build paths or VCS stamps, so that a rebuild can
// be compared with what is embedded (TestEmbeddedInitFresh).
func BuildArgs(out string) []string {
	return []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, "github.com/airlockhq/airlock/cmd/airlock-init"}
}
