// Command gen builds the sandbox init program (cmd/airlock-init) into
// internal/initbin/bin for the airlock binary to embed (initbin.BuildArgs).
// Run through `go generate ./internal/initbin`.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/airlockhq/airlock/internal/initbin"
)

func main() {
	if err := build("bin"); err != nil {
		fmt.Fprintf(os.Stderr, "initbin/gen: %v\n", err)
		os.Exit(1)
	}
}

// build writes the init program into dir, through a rename so a
// concurrent build (test packages build in parallel) never sees half.
func build(dir string) error {
	tmp, err := os.CreateTemp(dir, ".airlock-init-*")
	if err != nil {
		return err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", initbin.BuildArgs(tmp.Name())...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build cmd/airlock-init: %w", err)
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, initbin.Name))
}
