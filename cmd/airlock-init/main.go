// Command airlock-init is the sandbox init: PID 1 of every sandbox, and
// the spawner that forks them. It is not run by hand: the airlock binary
// embeds it (go generate ./internal/initbin builds it there) and the
// runtime executes it from a sealed memfd. Its imports are what each
// sandbox start pays for, so they are kept to package sbinit's few
// (TestInitDeps).
package main

import (
	"fmt"
	"os"

	"github.com/airlockhq/airlock/internal/runtime/linux/sbinit"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == sbinit.Arg {
		sbinit.Main()
	}
	fmt.Fprintln(os.Stderr, "airlock-init: the sandbox init, started by the airlock runtime; it is not run by hand")
	os.Exit(2)
}
