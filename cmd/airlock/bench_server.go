package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/runtime"
)

// benchServer is an in-process daemon on a data dir of its own, served on
// loopback as serve does, for the benches that go through the API.
type benchServer struct {
	dir string
	url string
	d   *daemon
	srv *http.Server
	c   *client.Client
}

// eg, when set, gives it an egress proxy.
func startBenchServer(ctx context.Context, pool int, eg *egress.Config, tune daemonTuning) (*benchServer, error) {
	return startBenchServerWrapped(ctx, pool, eg, tune, nil, nil)
}

// startBenchServerWrapped is startBenchServer with its HTTP handler and
// its service's runtime wrapped (nil: as they are), for a benchmark that
// times them.
func startBenchServerWrapped(ctx context.Context, pool int, eg *egress.Config, tune daemonTuning, wrap func(http.Handler) http.Handler, wrapRT func(runtime.Runtime) runtime.Runtime) (*benchServer, error) {
	dir, err := os.MkdirTemp("", "airlock-bench-")
	if err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o711)
	b := &benchServer{dir: dir}
	if b.d, err = startDaemon(ctx, dir, pool, eg, wrapRT, tune); err != nil {
		b.close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.close()
		return nil, err
	}
	var h http.Handler = b.d.handler
	if wrap != nil {
		h = wrap(h)
	}
	b.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: h}
	go b.srv.Serve(ln)
	key, err := os.ReadFile(b.d.keyPath)
	if err != nil {
		b.close()
		return nil, err
	}
	b.url = "http://" + ln.Addr().String()
	b.c = client.New(b.url, string(trimNL(key)))
	return b, nil
}

// close stops the server and removes the data dir (its pool unmounted).
func (b *benchServer) close() {
	if b.srv != nil {
		b.srv.Close()
	}
	if b.d != nil {
		b.d.shutdown()
	}
	unix.Unmount(filepath.Join(b.dir, "sandboxes"), unix.MNT_DETACH)
	os.RemoveAll(b.dir)
}
