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
	"runtime/pprof"
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
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
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
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	dm, err := startDaemon(ctx, dir, 0)
	if err != nil {
		return err
	}
	defer dm.close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: dm.handler}
	go srv.Serve(ln)
	defer srv.Close()
	key, err := os.ReadFile(dm.keyPath)
	if err != nil {
		return err
	}
	c := client.New("http://"+ln.Addr().String(), string(trimNL(key)))

	// Rows: total, create, exec, delete, for each path.
	d := make([][]time.Duration, 8)
	lap := func(row int, t *time.Time) {
		now := time.Now()
		d[row] = append(d[row], now.Sub(*t))
		*t = now
	}
	for i := range *n {
		t0 := time.Now()
		t := t0
		sb, err := dm.rt.Create(ctx, runtime.Spec{ID: fmt.Sprintf("bench-direct-%d", i)})
		if err != nil {
			return err
		}
		lap(1, &t)
		if _, err := sb.Exec(ctx, runtime.ExecRequest{Argv: []string{"true"}}); err != nil {
			return err
		}
		lap(2, &t)
		if err := sb.Destroy(ctx); err != nil {
			return err
		}
		lap(3, &t)
		d[0] = append(d[0], t.Sub(t0))
		t0 = time.Now()
		t = t0
		s, err := c.CreateSandbox(ctx, client.CreateRequest{})
		if err != nil {
			return err
		}
		lap(5, &t)
		if _, err := c.Exec(ctx, s.ID, client.ExecRequest{Cmd: []string{"true"}}); err != nil {
			return err
		}
		lap(6, &t)
		if err := c.DeleteSandbox(ctx, s.ID); err != nil {
			return err
		}
		lap(7, &t)
		d[4] = append(d[4], t.Sub(t0))
	}
	fmt.Printf("create -> exec true -> delete, n=%d per row, cold sandboxes, alternating\n", *n)
	fmt.Printf("%-40s %9s %9s %9s %9s\n", "path", "p50", "p95", "p99", "max")
	for i, name := range []string{"runtime (in process)", "  create", "  exec true", "  destroy",
		"HTTP API on loopback (Go client)", "  POST /v1/sandboxes", "  POST .../exec", "  DELETE /v1/sandboxes/{id}"} {
		row{name, d[i]}.print()
	}
	pd, pa := percentiles(d[0]), percentiles(d[4])
	fmt.Printf("API overhead at p50: %s\n", ms(pa[0]-pd[0]))
	return nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
