// Package initbin holds the sandbox init program (cmd/airlock-init) inside
// the airlock binary, so the binary stays one file and each sandbox starts
// a small program instead of the whole daemon. `go generate
// ./internal/initbin` builds it into bin/ (the README's build command and
// the test runner do); a binary built without it has none and the runtime
// falls back to executing itself, slower, and says so. It must never hand
// out the program in a form a sandbox could write to: the runtime executes
// it from a sealed memfd.
package initbin

import "embed"

//go:generate go run ./gen

// files holds bin/airlock-init when it was generated (bin/.gitkeep
// otherwise, so the package builds from a clean checkout).
//
//go:embed all:bin
var files embed.FS

// Name is the init program's file name under bin/.
const Name = "airlock-init"

// Bytes returns the embedded init program, nil when this binary was built
// without it.
func Bytes() []byte {
	b, err := files.ReadFile("bin/" + Name)
	if err != nil {
		return nil
	}
	return b
}

// BuildArgs are go's arguments that build the init program into out:
// static (with CGO_ENABLED=0 in the environment), stripped and
// reproducible, with no build paths or VCS stamps, so that a rebuild can
// be compared with what is embedded (TestEmbeddedInitFresh).
func BuildArgs(out string) []string {
	return []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, "github.com/airlockhq/airlock/cmd/airlock-init"}
}
