package main

import (
	"flag"
	"fmt"

	"github.com/airlockhq/airlock/internal/agent"
	"github.com/airlockhq/airlock/internal/version"
)

func versionCmd(args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: airlock version

Print this binary's version and the agent protocol version its sandboxes
speak. A server started on a data dir an older binary ran re-attaches
that binary's sandboxes, which keep their agent (see airlock doctor).`)
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	fmt.Printf("airlock %s (agent protocol %d)\n", version.String(), agent.ProtocolVersion)
	return nil
}
