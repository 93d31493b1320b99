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
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime"
	"golang.org/x/sys/unix"
)

// benchAPI measures create -> exec true -> delete through HTTP on loopback
// against an in-process daemon, beside the same cycle on its runtime
// directly, so the API's overhead shows.
func benchAPI(args []string) error {
	fs := flag.NewFlagSet("bench api", flag.ContinueOnError)
	n := fs.Int("n", 200, "iterations per row")
	if err := fs.Parse(args); err != nil {
		return exitError(2)
	}
	if *n < 1 {
		return errors.New("-n must be at least 1")
	}
	dir, err := os.MkdirTemp("", "airlock-bench-api-")
	if err != nil {
		return err
	}
	os.Chmod(dir, 0o711)
	defer func() {
		unix.Unmount(filepath.Join(dir, "sandboxes"), unix.MNT_DETACH)
		os.RemoveAll(dir)
	}()
	ctx := context.Background()
	d, err := startDaemon(ctx, dir, 0)
	if err != nil {
		return err
	}
	defer d.close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: d.handler}
	go srv.Serve(ln)
	defer srv.Close()
	key, err := os.ReadFile(d.keyPath)
	if err != nil {
		return err
	}
	c := client.New("http://"+ln.Addr().String(), string(trimNL(key)))

	var direct, api []time.Duration
	for i := range *n {
		t0 := time.Now()
		sb, err := d.rt.Create(ctx, runtime.Spec{ID: fmt.Sprintf("bench-direct-%d", i)})
		if err != nil {
			return err
		}
		if _, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"true"}}); err != nil {
			return err
		}
		if err := sb.Destroy(ctx); err != nil {
			return err
		}
		t1 := time.Now()
		s, err := c.CreateSandbox(ctx, client.CreateRequest{})
		if err != nil {
			return err
		}
		if _, err := c.Exec(ctx, s.ID, client.ExecRequest{Cmd: []string{"true"}}); err != nil {
			return err
		}
		if err := c.DeleteSandbox(ctx, s.ID); err != nil {
			return err
		}
		t2 := time.Now()
		direct, api = append(direct, t1.Sub(t0)), append(api, t2.Sub(t1))
	}
	fmt.Printf("create -> exec true -> delete, n=%d per row, cold sandboxes, alternating\n", *n)
	fmt.Printf("%-40s %9s %9s %9s %9s\n", "path", "p50", "p95", "p99", "max")
	row{"runtime (in process)", direct}.print()
	row{"HTTP API on loopback (Go client)", api}.print()
	pd, pa := percentiles(direct), percentiles(api)
	fmt.Printf("API overhead at p50: %s\n", ms(pa[0]-pd[0]))
	return nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
