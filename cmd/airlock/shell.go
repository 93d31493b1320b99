package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/airlockhq/airlock/client"
)

// detachKey (Ctrl-]) typed on an attached terminal detaches from it and
// leaves the shell running.
const detachKey = 0x1d

func shellCmd(args []string) error {
	fs := flag.NewFlagSet("shell", flag.ContinueOnError)
	env := envFlags{}
	fs.Var(env, "env", "environment variable KEY=VALUE (repeatable)")
	workdir := fs.String("workdir", "", "working directory (default the sandbox's)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: airlock shell [flags] ID

Open an interactive shell in a sandbox, in this terminal: a new session
that lasts until the shell exits. Exits with the shell's status. Ctrl-]
detaches and leaves the session running ('airlock attach' resumes it).`)
		fs.PrintDefaults()
	}
	pos, rest, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(pos) != 1 || len(rest) != 0 {
		return usageError(fs)
	}
	id := pos[0]
	if t := os.Getenv("TERM"); t != "" && env["TERM"] == "" {
		env["TERM"] = t
	}
	c := remote()
	ctx := context.Background()
	req := client.SessionRequest{Mode: "interactive", Cwd: *workdir, Env: env}
	if cols, rows, err := term.GetSize(int(os.Stdin.Fd())); err == nil && cols > 0 && rows > 0 {
		req.Cols, req.Rows = uint16(cols), uint16(rows)
	}
	ses, err := c.CreateSession(ctx, id, req)
	if err != nil {
		return sandboxErr(ctx, c, id, err)
	}
	code, detached, err := attachTerminal(ctx, c, id, ses.ID)
	if !detached {
		// The shell has ended, or the connection is lost: a session
		// nobody can reach again is not left behind.
		c.DeleteSession(context.WithoutCancel(ctx), id, ses.ID)
	}
	if err != nil {
		return err
	}
	return exitError(code)
}

func attachCmd(args []string) error {
	fs := flag.NewFlagSet("attach", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: airlock attach ID SESSION

Attach this terminal to a session's terminal: its recent output first,
then live. Ctrl-] detaches and leaves the session running. Exits with the
shell's status when it exits.`)
		fs.PrintDefaults()
	}
	pos, rest, err := parseArgs(fs, args, 2)
	if err != nil {
		return err
	}
	if len(pos) != 2 || len(rest) != 0 {
		return usageError(fs)
	}
	c := remote()
	code, _, err := attachTerminal(context.Background(), c, pos[0], pos[1])
	if err != nil {
		return sandboxErr(context.Background(), c, pos[0], err)
	}
	return exitError(code)
}

// reconnectFor is how long an attached terminal tries to reach the session
// again after its connection broke (a restart of the server, say).
const reconnectFor = time.Minute

// attachTerminal joins this process's terminal to a session's until the
// shell exits (its status), the user detaches, or the session is lost. A
// connection that breaks is made again, from where the output stopped.
func attachTerminal(ctx context.Context, c *client.Client, id, sid string) (code int, detached bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first, err := c.AttachSession(ctx, id, sid)
	if err != nil {
		return 0, false, err
	}
	var mu sync.Mutex
	t := first
	cur := func() *client.Terminal {
		mu.Lock()
		defer mu.Unlock()
		return t
	}
	defer func() { cur().Close() }()
	in := int(os.Stdin.Fd())
	tty := term.IsTerminal(in)
	nl := "\n"
	resize := func() {}
	if tty {
		old, err := term.MakeRaw(in)
		if err != nil {
			return 0, false, fmt.Errorf("terminal: %v", err)
		}
		defer term.Restore(in, old)
		nl = "\r\n"
		resize = func() {
			if cols, rows, err := term.GetSize(in); err == nil && cols > 0 && rows > 0 {
				cur().Resize(ctx, uint16(cols), uint16(rows))
			}
		}
		resize()
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for {
				select {
				case <-winch:
					resize()
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	detach := make(chan struct{})
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := os.Stdin.Read(buf)
			p := buf[:n]
			if i := bytes.IndexByte(p, detachKey); tty && i >= 0 {
				cur().Write(ctx, p[:i])
				close(detach)
				cancel()
				return
			}
			// What is typed while the connection is down is lost.
			if len(p) > 0 {
				cur().Write(ctx, p)
			}
			if err != nil {
				if err == io.EOF && !tty {
					cur().Write(ctx, []byte{0x04}) // input ended: ^D, as at a terminal
				}
				return
			}
		}
	}()
	for {
		out, err := cur().Read(ctx)
		if err == nil {
			os.Stdout.Write(out)
			continue
		}
		var end *client.TerminalEnd
		var ce *client.Error
		switch {
		case errors.As(err, &end) && end.Exited:
			if end.Signal != 0 {
				return 128 + end.Signal, false, nil
			}
			return end.ExitCode, false, nil
		case errors.As(err, &ce) && ce.Code == "invalid_argument":
			continue // a resize the server refused; the terminal goes on
		}
		select {
		case <-detach:
			fmt.Fprintf(os.Stderr, "%sairlock: detached from session %s; 'airlock attach %s %s' resumes it%s", nl, sid, id, sid, nl)
			return 0, true, nil
		default:
		}
		if end != nil {
			return 0, false, fmt.Errorf("session %s: %v", sid, err)
		}
		// The connection broke: the server may be restarting.
		fmt.Fprintf(os.Stderr, "%sairlock: connection to session %s lost (%v); reconnecting%s", nl, sid, err, nl)
		next, rerr := reattach(ctx, c, id, sid, cur().Offset())
		if rerr != nil {
			return 0, false, fmt.Errorf("session %s: %v; reconnecting: %v", sid, err, rerr)
		}
		mu.Lock()
		t.Close()
		t = next
		mu.Unlock()
		fmt.Fprintf(os.Stderr, "airlock: reconnected to session %s%s", sid, nl)
		resize()
	}
}

// reattach connects to a session's terminal again, from offset, trying
// for reconnectFor while the server cannot be reached.
func reattach(ctx context.Context, c *client.Client, id, sid string, offset int64) (*client.Terminal, error) {
	deadline := time.Now().Add(reconnectFor)
	wait := 100 * time.Millisecond
	for {
		t, err := c.AttachSessionAt(ctx, id, sid, offset)
		var ce *client.Error
		switch {
		case err == nil:
			return t, nil
		case errors.As(err, &ce) && ce.Status != http.StatusServiceUnavailable && ce.Status != http.StatusBadGateway:
			return nil, err // the server answered: the session is not there
		case time.Now().After(deadline):
			return nil, err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wait = min(2*wait, 2*time.Second)
	}
}
