package linux

import (
	"fmt"
	"os"
	"strings"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/landlock"
	"github.com/airlockhq/airlock/internal/runtime/linux/seccomp"
)

// Protections reports each isolation layer and whether sandboxes this
// runtime creates get it, with the reason when they do not.
func (r *Runtime) Protections() []runtime.Protection {
	var ps []runtime.Protection
	add := func(name string, ok bool, detail string) {
		ps = append(ps, runtime.Protection{Name: name, Enforced: ok, Detail: detail})
	}
	nsOK, nsDetail := namespacesAvailable()
	add("namespaces (user, mount, pid, net, uts, ipc, cgroup)", nsOK, nsDetail)
	if r.rootless {
		add("per-sandbox uid range", false, "rootless: one uid mapped; commands run as root of their own user namespace")
	} else {
		add("per-sandbox uid range", true, fmt.Sprintf("uids %d+ on the host, 65536 per sandbox", uidBase))
	}
	add("overlay root, pivot_root, masked /proc", true, "")
	add("capabilities dropped (all sets), no_new_privs", true, "")
	if ok, detail := seccomp.Supported(); ok {
		add("seccomp filter", true, detail)
	} else {
		add("seccomp filter", false, detail)
	}
	if abi := landlock.ABI(); abi > 0 {
		add("landlock", true, fmt.Sprintf("ABI %d", abi))
	} else {
		add("landlock", false, "kernel has no landlock (or it is disabled)")
	}
	add("cgroup limits (memory, cpu, pids)", r.cgErr == nil && !r.rootless, errString(r.cgErr))
	if r.quota != nil {
		add("disk limit on the writable layer", true, r.quota.Mode()+" mode")
	} else {
		add("disk limit on the writable layer", false, errString(r.quotaErr))
	}
	add("network: loopback only", true, "")
	return ps
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func namespacesAvailable() (bool, string) {
	var missing []string
	for _, ns := range []string{"user", "mnt", "pid", "net", "uts", "ipc", "cgroup"} {
		if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
			missing = append(missing, ns)
		}
	}
	if len(missing) > 0 {
		return false, "missing: " + strings.Join(missing, ", ")
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return false, "user namespaces disabled (user.max_user_namespaces=0)"
	}
	return true, ""
}
