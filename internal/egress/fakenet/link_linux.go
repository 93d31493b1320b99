package fakenet

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/netns"
)

// linkPrefix starts the name of every host-side veth Start makes, so a
// later Start can recognise one a killed test process left behind.
const linkPrefix = "alkfn"

// lockPath serialises Nets across test processes: the routes are host-wide,
// so two at once would fight over them. flock is released by the kernel
// when a holder dies, so a killed test cannot wedge later ones.
const lockPath = "/run/airlock-fakenet.lock"

// transits are the /30s the veth pair may use, in order of preference.
// Both are documentation ranges, but a VM may sit on one of them itself
// (192.0.2.0/24 is a common test-bed LAN), so the first the host does not
// route is used.
var transits = []netip.Prefix{
	netip.MustParsePrefix("198.51.100.0/30"),
	netip.MustParsePrefix("192.0.2.0/30"),
}

func lock(logf func(string, ...any)) (unlock func() error, err error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		logf("fakenet: waiting for another fake internet on this host (%s) to be removed", lockPath)
		for err = unix.EINTR; errors.Is(err, unix.EINTR); {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	return f.Close, nil
}

// removeStale deletes veths a killed test process left behind. Holding the
// lock proves their owner is gone; their routes go with them.
func removeStale(logf func(string, ...any)) error {
	out, err := exec.Command("ip", "-j", "link", "show").Output()
	if err != nil {
		return fmt.Errorf("ip link show: %w", err)
	}
	var links []struct {
		Name string `json:"ifname"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return fmt.Errorf("parse ip link show: %w", err)
	}
	for _, l := range links {
		if !strings.HasPrefix(l.Name, linkPrefix) {
			continue
		}
		if _, err := net.InterfaceByName(l.Name); err != nil {
			continue // gone with its peer, deleted just before
		}
		logf("fakenet: removing %s, left behind by an earlier test process", l.Name)
		if err := ip("link", "del", l.Name); err != nil {
			// The kernel also deletes it, asynchronously, once the dead
			// process's namespace is freed: only a link still there is
			// a failure.
			if _, lerr := net.InterfaceByName(l.Name); lerr == nil {
				return err
			}
		}
	}
	return nil
}

type route struct {
	Dst   string `json:"dst"`
	Dev   string `json:"dev"`
	Type  string `json:"type"`
	Table string `json:"table"`
}

func (r route) prefix() (netip.Prefix, error) {
	if strings.Contains(r.Dst, "/") {
		return netip.ParsePrefix(r.Dst)
	}
	a, err := netip.ParseAddr(r.Dst)
	return netip.PrefixFrom(a, a.BitLen()), err
}

// pickTransit refuses to start where a host route more specific than a
// default one overlaps hostRoutes (taking over 169.254.169.254 from a
// cloud VM's metadata route would break the host, not just the test) and
// picks the first transit /30 nothing on the host routes or owns.
func pickTransit() (host, peer netip.Addr, err error) {
	out, err := exec.Command("ip", "-4", "-j", "route", "show", "table", "all").Output()
	if err != nil {
		return host, peer, fmt.Errorf("ip route show: %w", err)
	}
	var routes []route
	if err := json.Unmarshal(out, &routes); err != nil {
		return host, peer, fmt.Errorf("parse ip route show: %w", err)
	}
	var taken []netip.Prefix
	for _, r := range routes {
		if r.Dst == "default" {
			continue
		}
		p, err := r.prefix()
		if err != nil {
			return host, peer, fmt.Errorf("parse route %q: %w", r.Dst, err)
		}
		for _, want := range hostRoutes {
			if p.Overlaps(want) {
				return host, peer, fmt.Errorf("host already routes %s (%s %s dev %s table %s); refusing to take over %s",
					p, r.Type, r.Dst, r.Dev, r.Table, want)
			}
		}
		taken = append(taken, p)
	}
next:
	for _, t := range transits {
		for _, p := range taken {
			if p.Overlaps(t) {
				continue next
			}
		}
		host = t.Addr().Next()
		return host, host.Next(), nil
	}
	return host, peer, fmt.Errorf("every transit prefix %v is in use on this host", transits)
}

// plumb creates the veth pair between the host and ns, addresses both ends,
// puts the fake hosts' addresses on the namespace's lo and routes them from
// the host. It registers the pair's deletion, which removes the routes too.
func plumb(u *undo, ns *os.File, hostIP, peerIP netip.Addr) (string, error) {
	var b [2]byte
	rand.Read(b[:])
	link := linkPrefix + hex.EncodeToString(b[:])
	peer := link + "p"
	// The child sees ns as its fd 3; ip opens a netns given as a path.
	cmd := exec.Command("ip", "link", "add", link, "type", "veth", "peer", "name", peer, "netns", "/proc/self/fd/3")
	cmd.ExtraFiles = []*os.File{ns}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("create veth %s: %w: %s", link, err, bytes.TrimSpace(out))
	}
	u.add(func() error { return ip("link", "del", link) })

	transit := func(a netip.Addr) string { return netip.PrefixFrom(a, 30).String() }
	if err := ip("addr", "add", transit(hostIP), "dev", link); err != nil {
		return "", err
	}
	if err := ip("link", "set", link, "up"); err != nil {
		return "", err
	}
	if err := netns.SetLoopbackUp(ns); err != nil {
		return "", err
	}
	inside := [][]string{
		{"addr", "add", transit(peerIP), "dev", peer},
		{"link", "set", peer, "up"},
		{"addr", "add", DNSIP + "/32", "dev", "lo"},
	}
	for _, t := range targets {
		inside = append(inside, []string{"addr", "add", t.ip + "/32", "dev", "lo"})
	}
	// A child forked from the locked thread starts in that thread's
	// namespace, so plain ip commands configure the inside.
	err := netns.Do(ns, func() error {
		for _, args := range inside {
			if err := ip(args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("configure namespace: %w", err)
	}
	for _, p := range hostRoutes {
		if err := ip("route", "add", p.String(), "via", peerIP.String(), "dev", link); err != nil {
			return "", err
		}
	}
	return link, nil
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
