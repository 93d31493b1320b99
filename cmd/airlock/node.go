package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/egresshost"
	"github.com/airlockhq/airlock/internal/noderpc"
	"github.com/airlockhq/airlock/internal/nodes"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/version"
)

const nodeUsage = `Usage: airlock node --join URL --token TOKEN --data-dir DIR --addr HOST:PORT [--name NAME] [--ca-hash sha256:HEX]
       airlock node --kubernetes|--kubeconfig PATH [--namespace NS] --data-dir DIR --addr HOST:PORT [--name NAME]
       airlock node drain --kubernetes|--kubeconfig PATH [--namespace NS] --name NAME [--wait DURATION]

Run a node: a host that runs sandboxes for the control plane at URL. The
first start joins with a one-time token (airlock nodes token, on the control
plane) and keeps the node's identity (its key, its certificate, the node CA)
in DIR/node; later starts need neither --token nor --join. The node serves
its API on --addr, over mutual TLS, to the control plane only.

The control plane places sandboxes on it and reaches them through it:
commands, files, terminals and ports. Each sandbox's egress proxy runs
here, with the --egress-* flags (give the control plane's): its traffic
leaves from this host, and goes on while the control plane is down.
Sandboxes outlive the node process: a node restarted with the same data
dir takes them back.

In Kubernetes (a DaemonSet), --kubernetes replaces the join: the node
(--name, default $NODE_NAME) waits for the Secret airlock-node-ca that the
control plane makes, issues itself a certificate from it, and registers
and renews the Lease airlock-node-NAME with its address and figures.
"airlock node drain" (the pod's preStop) marks the Lease draining, until
the node's next process registers, and waits until the node runs no
sandbox.`

func nodeCmd(args []string) error {
	if len(args) > 0 && args[0] == "drain" {
		return nodeDrainCmd(args[1:])
	}
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	join := fs.String("join", "", "the control plane's API URL, http(s)://HOST:PORT")
	token := fs.String("token", "", "one-time join token (airlock nodes token); only to join")
	caHash := fs.String("ca-hash", "", "take only the node CA with this hash (sha256:HEX, as airlock nodes token prints it)")
	dataDir := dataDirFlag(fs, dataDirEnv(), "the node's own data dir: its identity, sandboxes and templates ($AIRLOCK_DATA_DIR); not a server's")
	addr := fs.String("addr", "", "where to serve the node API, HOST:PORT, reachable by the control plane")
	name := fs.String("name", "", "the node's name, a DNS label (default: the host name)")
	maxSandboxes := fs.Int("max-sandboxes", 0, "the most sandboxes this node takes (default: one per 32 MiB of its memory)")
	pool := fs.Int("pool", 2, "sandboxes kept booted for fast creates, at least (it grows to the create rate and the last burst; 0 disables)")
	hostRoot := fs.String("host-root", "/", "where the host's root filesystem is, for the base template (its /usr, /lib... and /etc entries): in a container, the host's / mounted read-only, as the Helm chart mounts it at /host")
	egf := egressFlagsOf(fs)
	kube := kubeFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), nodeUsage)
		printFlags(fs)
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if *dataDir == "" {
		return badInput("node", "--data-dir is required: a directory of the node's own, not a server's")
	}
	if *addr == "" {
		return badInput("node", "--addr is required: HOST:PORT where the control plane reaches this node")
	}
	if *maxSandboxes < 0 || *pool < 0 {
		return badInput("node", "--max-sandboxes must be at least 1, --pool at least 0")
	}
	eg, err := egf.config()
	if err != nil {
		return badInput("node", "%v", err)
	}
	if _, err := os.Stat(filepath.Join(*dataDir, "airlock.db")); err == nil {
		return badInput("node", "%s is a server's data dir (it holds airlock.db): give the node a directory of its own", *dataDir)
	}
	if kube.enabled() && (*join != "" || *token != "" || *caHash != "") {
		return badInput("node", "--kubernetes/--kubeconfig: the node registers with a Lease and takes its certificate from the cluster's node CA: no --join, --token or --ca-hash")
	}
	if err := os.MkdirAll(*dataDir, 0o711); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	lock, err := lockDataDir(*dataDir)
	if err != nil {
		return err
	}
	defer lock.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if kube.enabled() {
		return nodeKube(ctx, kube, nodeKubeConfig{name: *name, addr: *addr, dataDir: *dataDir, maxSandboxes: *maxSandboxes, pool: *pool, hostRoot: *hostRoot, egress: *eg})
	}

	id, err := nodes.LoadIdentity(*dataDir)
	switch {
	case errors.Is(err, nodes.ErrNoIdentity):
		if *join == "" || *token == "" {
			return badInput("node", "this data dir's node has not joined: give --join URL and --token TOKEN (airlock nodes token, on the control plane)")
		}
		if *name == "" {
			*name = defaultNodeName()
		}
		if id, err = nodes.Join(ctx, nodes.JoinOptions{ControlPlane: *join, Token: *token, Name: *name, Addr: *addr, CAHash: *caHash, DataDir: *dataDir}); err != nil {
			fmt.Fprintf(os.Stderr, "airlock node: %v\n", err)
			return exitError(1)
		}
		fmt.Printf("airlock: joined %s as node %s\n", id.ControlPlane, id.Name)
	case err != nil:
		return err
	default:
		if *join != "" && strings.TrimRight(*join, "/") != strings.TrimRight(id.ControlPlane, "/") {
			return badInput("node", "this data dir's node joined %s, not %s: give it a new data dir to join another", id.ControlPlane, *join)
		}
		if *name != "" && *name != id.Name {
			return badInput("node", "this data dir's node is %s, not %s", id.Name, *name)
		}
		if *addr != id.Addr {
			return badInput("node", "this node joined with --addr %s, where the control plane calls it: remove it there (airlock nodes rm %s) and join again to move it", id.Addr, id.Name)
		}
	}
	rt, closeRT, err := openNodeRuntime(*dataDir, *pool, *hostRoot)
	if err != nil {
		return err
	}
	defer closeRT()
	eh, err := egresshost.New(*dataDir, *eg, rt)
	if err != nil {
		return err
	}
	defer eh.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := nodeServer(id, rt, eh, *dataDir, *maxSandboxes)
	fmt.Printf("airlock: node %s serving the node API on https://%s for %s (data in %s)\n", id.Name, ln.Addr(), id.ControlPlane, *dataDir)
	if left := time.Until(id.CertExpiresAt()); left < 30*24*time.Hour {
		fmt.Fprintf(os.Stderr, "airlock: warning: the node's certificate ends in %s: the control plane renews it at its next heartbeat; if it cannot reach this node before then, join again with a new token\n", left.Round(time.Hour))
	}
	err = serveUntil(ctx, srv, func() error { return srv.ServeTLS(ln, "", "") }, "airlock: node shutting down", 2*time.Second)
	if errors.Is(err, context.DeadlineExceeded) {
		// Streams that never end on their own (the egress proxy's
		// listeners in sandboxes, terminals, follows) are cut: the
		// control plane takes them up again when the node is back.
		err = srv.Close()
	}
	return err
}

// lockDataDir takes the data dir for this node process alone.
func lockDataDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "node.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, badInput("node", "another airlock node runs on %s", dir)
		}
		return nil, fmt.Errorf("data dir: lock: %w", err)
	}
	return f, nil
}

// defaultNodeName is the host name made a DNS label: lower case, what is
// not a letter, digit or '-' dropped, cut at the first dot.
func defaultNodeName() string {
	h, _ := os.Hostname()
	h, _, _ = strings.Cut(strings.ToLower(h), ".")
	var b strings.Builder
	for _, c := range h {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteRune(c)
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 63 {
		name = name[:63]
	}
	if name == "" {
		name = "node"
	}
	return name
}

// nodeServer is the node API's server: the status heartbeats ask for, the
// runtime (noderpc) and the sandboxes' egress proxies (eh), over mutual
// TLS with the node's identity.
func nodeServer(id *nodes.Identity, rt *linux.Runtime, eh *egresshost.Host, dataDir string, maxSandboxes int) *http.Server {
	return nodeServerOf(id, rt, rt, eh, dataDir, maxSandboxes)
}

// nodeServerOf is nodeServer serving served, rt or a wrapper of it (bench
// api times the node's runtime calls).
func nodeServerOf(id *nodes.Identity, rt *linux.Runtime, served runtime.Runtime, eh *egresshost.Host, dataDir string, maxSandboxes int) *http.Server {
	status := nodeStatus(id.Name, rt, dataDir, maxSandboxes)
	mux := http.NewServeMux()
	mux.Handle(nodes.StatusPath, nodes.StatusHandler(status))
	renew := id.RenewHandler()
	mux.Handle(nodes.RenewPath, renew)
	mux.Handle(nodes.CertificatePath, renew)
	mux.Handle("/node/v1/", noderpc.NewServerWith(served, eh))
	// Each sandbox holds a few streams for good (the egress proxy's two
	// listeners, followers, held stdins): far more than HTTP/2's usual
	// 250 on the control plane's one connection.
	return &http.Server{Handler: mux, TLSConfig: id.ServerTLS(), ReadHeaderTimeout: 10 * time.Second,
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: 1 << 16, SendPingTimeout: 15 * time.Second, PingTimeout: 10 * time.Second}}
}

// nodeStatus is what the node says of itself: to heartbeats, and in its
// Lease in a cluster.
func nodeStatus(name string, rt *linux.Runtime, dataDir string, maxSandboxes int) func(context.Context) (nodes.Status, error) {
	capacity := nodes.HostCapacity(dataDir, maxSandboxes)
	return func(ctx context.Context) (nodes.Status, error) {
		ids, err := rt.List(ctx)
		if err != nil {
			return nodes.Status{}, err
		}
		use := nodes.HostUse(dataDir)
		use.Sandboxes = len(ids)
		return nodes.Status{Name: name, Version: version.String(), Protocol: nodes.Protocol, Capacity: capacity, Use: use}, nil
	}
}

// openNodeRuntime opens a node's Linux runtime on its data dir, and what
// closes it as the node stops: its warm pool destroyed and, when no user
// sandbox is left, its disk pool unmounted; user sandboxes run on for the
// node's next process.
func openNodeRuntime(dataDir string, pool int, hostRoot string) (*linux.Runtime, func(), error) {
	rt, err := linux.New(linux.Config{StateDir: dataDir, PoolSize: pool, SweepEvery: 15 * time.Second, HostRoot: hostRoot})
	if err != nil {
		return nil, nil, err
	}
	return rt, func() {
		rt.Close()
		if released, err := rt.ReleaseDiskPool(); err != nil {
			fmt.Fprintf(os.Stderr, "airlock: release disk pool: %v\n", err)
		} else if released {
			fmt.Println("airlock: disk pool unmounted")
		}
	}, nil
}
