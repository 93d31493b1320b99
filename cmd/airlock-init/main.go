// Command airlock-init is the sandbox init: PID 1 of every sandbox, and
// the spawner that forks them. It is not run by hand: the airlock binary
// embeds it (go generate ./internal/initbin builds it there) and the
// runtime executes it from a sealed memfd. Its imports are what each
// sandbox start pays for, so they are kept to package sbinit's few
// (TestInitDeps).
//
// Named airlock-approve, it is that command instead (package askchan): a
// task's sandbox gets a copy of it, to ask a person through Airlock's
// approvals. One program keeps the airlock binary to one embedded
// program and the command to the init's imports.
package main

import (
	"fmt"
	"os"

	"github.com/airlockhq/airlock/internal/askchan"
	"github.com/airlockhq/airlock/internal/runtime/linux/sbinit"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == sbinit.Arg {
		sbinit.Main()
	}
	if askchan.IsCommand(os.Args[0]) {
		askchan.Run()
	}
	fmt.Fprintln(os.Stderr, "airlock-init: the sandbox init, started by the airlock runtime; it is not run by hand")
	os.Exit(2)
}
