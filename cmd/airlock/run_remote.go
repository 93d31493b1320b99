package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
	"unicode/utf8"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// maxRemoteStdin bounds what `airlock run` forwards to a server's exec,
// which takes stdin in the request body.
const maxRemoteStdin = 1 << 20

// reachableServer returns a client of the server `airlock run` should use:
// the one at $AIRLOCK_URL (or the default address) when it answers its
// health check at once and a key is known. Otherwise it says why not, for
// the line that says the run is embedded. AIRLOCK_RUN_LOCAL=1 forces the
// embedded runtime.
func reachableServer() (*client.Client, string) {
	if os.Getenv("AIRLOCK_RUN_LOCAL") == "1" {
		return nil, "AIRLOCK_RUN_LOCAL=1"
	}
	c := remote()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	switch {
	case c.Health(ctx) != nil:
		return nil, "no server answers at " + serverURL()
	case !c.HasKey():
		return nil, "the server at " + serverURL() + " answers, but there is no API key: set AIRLOCK_API_KEY"
	}
	return c, ""
}

// runRemote is `airlock run` through a server: create, exec with streamed
// output, delete.
func runRemote(c *client.Client, req client.CreateRequest, argv []string, timeout time.Duration) error {
	stdin, err := remoteStdin("run with AIRLOCK_RUN_LOCAL=1 to stream it")
	if err != nil {
		return err
	}
	// The sandbox lives as long as the command may, and a minute more, up
	// to the server's maximum; the command then ends a minute before it.
	req.Timeout = min(sandbox.MaxTimeout, max(5*time.Minute, timeout+time.Minute))
	if timeout > 0 {
		timeout = min(timeout, req.Timeout-time.Minute)
	}
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
		return stdinTooLarge(err, stdin, "run with AIRLOCK_RUN_LOCAL=1 to stream it")
	}
	switch {
	case res.TimedOut:
		fmt.Fprintf(os.Stderr, "airlock: command timed out after %s\n", shortDuration(timeout))
	case res.OOMKilled:
		fmt.Fprintln(os.Stderr, "airlock: command was killed: out of memory")
	}
	if res.Signal != 0 {
		return exitError(128 + res.Signal)
	}
	return exitError(res.ExitCode)
}

// remoteStdin reads piped stdin for a server's exec, which takes it in
// the request as a JSON string: at most 1 MiB of UTF-8 text. A terminal
// or /dev/null gives none. instead says what to do with more, or bytes.
func remoteStdin(instead string) (string, error) {
	fi, err := os.Stdin.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice != 0 {
		return "", nil
	}
	b, err := io.ReadAll(io.LimitReader(os.Stdin, maxRemoteStdin+1))
	if err != nil {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	switch {
	case len(b) > maxRemoteStdin:
		return "", fmt.Errorf("stdin is over 1 MiB, more than a server's exec takes: %s", instead)
	case !utf8.Valid(b):
		// A JSON string would carry U+FFFD instead of those bytes.
		return "", fmt.Errorf("stdin is not UTF-8 text, which a server's exec takes: %s", instead)
	}
	return string(b), nil
}

// stdinTooLarge says, when the server refused an exec's body as too large
// and stdin made it so, that stdin was the cause and what to do instead.
func stdinTooLarge(err error, stdin, instead string) error {
	var ce *client.Error
	if stdin == "" || !errors.As(err, &ce) || ce.Status != http.StatusRequestEntityTooLarge {
		return err
	}
	return fmt.Errorf("stdin (%s) makes the exec request larger than the server takes (%v): %s", plural(int64(len(stdin)), "byte"), err, instead)
}
