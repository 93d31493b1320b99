package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/airlockhq/airlock/client"
)

// maxRemoteStdin bounds what `airlock run` forwards to a server's exec,
// which takes stdin in the request body.
const maxRemoteStdin = 1 << 20

// reachableServer returns a client of the server `airlock run` should use:
// the one at $AIRLOCK_URL (or the default address) when it answers its
// health check at once and a key is known. AIRLOCK_RUN_LOCAL=1 forces the
// embedded runtime.
func reachableServer() (*client.Client, bool) {
	if os.Getenv("AIRLOCK_RUN_LOCAL") == "1" {
		return nil, false
	}
	c := remote()
	if !c.HasKey() {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	return c, c.Health(ctx) == nil
}

// runRemote is `airlock run` through a server: create, exec with streamed
// output, delete.
func runRemote(c *client.Client, req client.CreateRequest, argv []string, timeout time.Duration) error {
	stdin, err := remoteStdin()
	if err != nil {
		return err
	}
	// The sandbox lives as long as the command may, and a minute more.
	req.Timeout = max(5*time.Minute, timeout+time.Minute)
	ctx, stop := remoteContext()
	defer stop()
	sb, err := c.CreateSandbox(ctx, req)
	if err != nil {
		return err
	}
	defer c.DeleteSandbox(context.Background(), sb.ID)
	if req.Network != nil || len(req.Secrets) > 0 {
		defer printDenials(context.Background(), c, sb.ID)
	}
	res, err := c.ExecStream(ctx, sb.ID, client.ExecRequest{Cmd: argv, Stdin: stdin, Timeout: timeout}, os.Stdout, os.Stderr)
	if err != nil {
		if ctx.Err() != nil {
			return exitError(130)
		}
		return err
	}
	switch {
	case res.TimedOut:
		fmt.Fprintf(os.Stderr, "airlock: command timed out after %s\n", timeout)
	case res.OOMKilled:
		fmt.Fprintln(os.Stderr, "airlock: command was killed: out of memory")
	}
	if res.Signal != 0 {
		return exitError(128 + res.Signal)
	}
	return exitError(res.ExitCode)
}

// remoteStdin reads piped stdin (a terminal or /dev/null gives none).
func remoteStdin() (string, error) {
	fi, err := os.Stdin.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice != 0 {
		return "", nil
	}
	b, err := io.ReadAll(io.LimitReader(os.Stdin, maxRemoteStdin+1))
	if err != nil {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	if len(b) > maxRemoteStdin {
		return "", errors.New("stdin is over 1 MiB: a server exec takes it in the request; run with AIRLOCK_RUN_LOCAL=1 to stream it")
	}
	return string(b), nil
}
