package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/mcp"
)

// mcpCmd serves MCP on stdin and stdout for a harness that launches it as
// a subprocess. It uses the server at $AIRLOCK_URL with $AIRLOCK_API_KEY
// (as every CLI verb does) or, when none answers there, a daemon of its own
// on a private loopback port. stdout carries the protocol and nothing else.
func mcpCmd(args []string) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	dataDir := dataDirFlag(fs, filepath.Join(defaultDataDir(), "mcp"), "data dir of the embedded daemon, used when no server answers at $AIRLOCK_URL")
	embedded := fs.Bool("embedded", false, "always run the embedded daemon, even if a server answers at $AIRLOCK_URL")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: airlock mcp [--data-dir DIR] [--embedded]

Serve MCP on stdin and stdout, for a harness that starts it: on the
server at $AIRLOCK_URL with $AIRLOCK_API_KEY (as every verb), or, when
none answers there, on a daemon of its own in this process.`)
		printFlags(fs)
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	// Anything printed by mistake would corrupt the protocol: stdout is
	// the protocol's alone, and the rest of the process writes to stderr.
	out := os.Stdout
	os.Stdout = os.Stderr
	ctx, stop := remoteContext()
	defer stop()

	c := remote()
	if !*embedded {
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := c.Health(hctx)
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "airlock mcp: no server at %s (%v); starting an embedded one (data in %s)\n", serverURL(), err, *dataDir)
			*embedded = true
		}
	}
	if *embedded {
		ec, closeDaemon, err := embeddedDaemon(ctx, *dataDir)
		if err != nil {
			return fmt.Errorf("embedded daemon: %w", err)
		}
		defer closeDaemon()
		c = ec
	}
	s := mcp.NewServer(mcp.Fixed(c))
	err := s.Run(ctx, &mcpsdk.IOTransport{Reader: os.Stdin, Writer: out})
	if err != nil && (ctx.Err() != nil || errors.Is(err, mcpsdk.ErrConnectionClosed)) {
		return nil // the harness went away or stopped us
	}
	return err
}

// embeddedDaemon starts a daemon in this process on a private loopback
// port and returns a client with its admin key, and what stops it.
func embeddedDaemon(ctx context.Context, dataDir string) (*client.Client, func(), error) {
	eg, err := egressConfig("", "", nil)
	if err != nil {
		return nil, nil, err
	}
	d, err := startDaemon(ctx, dataDir, 1, eg, nil, daemonTuning{})
	if err != nil {
		return nil, nil, err
	}
	key, err := os.ReadFile(d.keyPath)
	if err != nil {
		d.close()
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		d.close()
		return nil, nil, err
	}
	srv := &http.Server{Handler: d.handler, ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(d.events.EndStreams)
	go srv.Serve(ln)
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			fmt.Fprintf(os.Stderr, "airlock mcp: shutdown: %v\n", err)
		}
		d.close()
	}
	return client.New("http://"+ln.Addr().String(), strings.TrimSpace(string(key))), stop, nil
}
