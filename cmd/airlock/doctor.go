package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/agent"
	"github.com/airlockhq/airlock/internal/runtime/linux"
	"github.com/airlockhq/airlock/internal/runtime/linux/cgroups"
	"github.com/airlockhq/airlock/internal/runtime/linux/landlock"
	"github.com/airlockhq/airlock/internal/runtime/linux/quota"
	"github.com/airlockhq/airlock/internal/runtime/linux/seccomp"
	"github.com/airlockhq/airlock/internal/version"
)

// doctorCmd prints what this host offers and which protections sandboxes
// created here will get. It exits non-zero when a protection is missing.
func doctorCmd(args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	given := dataDirFlag(fs, "", "the data dir to check ($AIRLOCK_DATA_DIR; default: the one the server at $AIRLOCK_URL runs on, else "+defaultDataDir()+")")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: airlock doctor [--data-dir DIR]

Report what this host offers and which protections sandboxes created on
the data dir get; exit 1 if one is missing. The data dir is the one
given, else the one the server at $AIRLOCK_URL runs on (asked with an
admin key: GET /v1/server), else the default. $AIRLOCK_DATA_DIR counts as
given.`)
		printFlags(fs)
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	dataDir, from, si := doctorDataDir(*given)
	if _, err := os.Stat(dataDir); *given != "" && err != nil {
		return badInput("doctor", "--data-dir %s: %v", dataDir, errors.Unwrap(err))
	}
	var uname [3]string
	for i, f := range []string{"ostype", "osrelease", "version"} {
		b, _ := os.ReadFile("/proc/sys/kernel/" + f)
		uname[i] = strings.TrimSpace(string(b))
	}
	fmt.Printf("airlock %s (agent protocol %d)\n", version.String(), agent.ProtocolVersion)
	if si != nil {
		fmt.Printf("  server        %s at %s, agent protocol %d; running sandboxes by agent protocol: %s\n",
			si.Version, serverURL(), si.AgentProtocol, agentCounts(si.SandboxAgents))
	}
	fmt.Printf("host\n  kernel        %s %s\n  user          uid %d", uname[0], uname[1], os.Geteuid())
	if os.Geteuid() != 0 {
		fmt.Print(" (rootless: fewer layers, see below)")
	}
	fmt.Println()
	if info, err := cgroups.Detect(); err == nil {
		var ctls []string
		for c, at := range info.Controllers {
			ctls = append(ctls, c+"@"+at)
		}
		sort.Strings(ctls)
		fmt.Printf("  cgroups       %s; controllers: %s; cgroup.kill %v, cgroup.freeze %v; writable %v\n",
			info.Version, strings.Join(ctls, " "), info.Kill, info.Freeze, info.Writable)
	} else {
		fmt.Printf("  cgroups       unavailable: %v\n", err)
	}
	ok, detail := seccomp.Supported()
	fmt.Printf("  seccomp       %s\n", yesNo(ok, detail))
	fmt.Printf("  landlock      %s\n", yesNo(landlock.ABI() > 0, fmt.Sprintf("ABI %d", landlock.ABI())))
	ovl, ovlDetail := overlayInUserns()
	fmt.Printf("  overlay       %s\n", yesNo(ovl, ovlDetail))
	idm, idmDetail := idmappedMounts()
	fmt.Printf("  idmapped mnts %s\n", yesNo(idm, idmDetail))
	fmt.Printf("  data dir      %s (%s)\n", dataDir, from)
	qok, qdetail := quota.Detect(filepath.Join(dataDir, "sandboxes"))
	fmt.Printf("  disk quota    %s\n", yesNo(qok, qdetail))

	rt, err := linux.New(linux.Config{StateDir: dataDir})
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	defer rt.Close()
	fmt.Printf("  sandbox init  %s\n", rt.InitSource())
	fmt.Printf("\nprotections for sandboxes created on %s\n", dataDir)
	missing := 0
	for _, p := range rt.Protections() {
		mark := "yes"
		if !p.Enforced {
			mark, missing = "NO ", missing+1
		}
		line := fmt.Sprintf("  [%s] %s", mark, p.Name)
		if p.Detail != "" {
			line += " — " + p.Detail
		}
		fmt.Println(line)
	}
	if missing > 0 {
		return exitError(1)
	}
	return nil
}

// doctorDataDir picks the data dir doctor reports on, and says why that
// one: the one given (flag or environment), else the running server's,
// else the default (what a server started without --data-dir uses). si is
// what the server at $AIRLOCK_URL said of itself, if it answered.
func doctorDataDir(given string) (dir, from string, si *client.ServerInfo) {
	c := remote()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var err error
	if err = c.Health(ctx); err == nil {
		var info client.ServerInfo
		if info, err = c.ServerInfo(ctx); err == nil {
			si = &info
		}
	}
	switch {
	case given != "":
		return given, "given with --data-dir", si
	case dataDirEnv() != "":
		return dataDirEnv(), "from $AIRLOCK_DATA_DIR", si
	case si != nil && si.DataDir != "":
		return si.DataDir, "the data dir of the server at " + serverURL(), si
	case si == nil && !errors.As(err, new(*client.Error)):
		return defaultDataDir(), "the default; no server answers at " + serverURL(), nil
	}
	why := "it did not say"
	if err != nil {
		why = explain(err).Error()
	}
	return defaultDataDir(), "the default; the server at " + serverURL() + " answers but did not say its own: " + why, si
}

// agentCounts shows sandbox counts by agent protocol, newest first.
func agentCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func yesNo(ok bool, detail string) string {
	s := "no"
	if ok {
		s = "yes"
	}
	if detail != "" {
		s += " (" + detail + ")"
	}
	return s
}

func overlayInUserns() (bool, string) {
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil || !strings.Contains(string(b), "overlay") {
		return false, "overlay filesystem not in /proc/filesystems"
	}
	return kernelAtLeast(5, 11), "in a user namespace needs kernel 5.11+"
}

func idmappedMounts() (bool, string) {
	return kernelAtLeast(5, 12), "mount_setattr(MOUNT_ATTR_IDMAP), kernel 5.12+; not used yet"
}

func kernelAtLeast(major, minor int) bool {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return false
	}
	var ma, mi int
	fmt.Sscanf(string(b), "%d.%d", &ma, &mi)
	return ma > major || (ma == major && mi >= minor)
}
