package linux_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/runtime"
)

// posture is the security-relevant state of a process, collected inside a
// live sandbox and compared with what the configuration promises.
type posture struct {
	Status        map[string]string // Cap*, NoNewPrivs, Seccomp from /proc/self/status
	UID           string            // id -u
	HostUIDZero   bool              // uid_map maps to host uid 0
	SameNamespace map[string]bool   // namespace shared with the host
	CgroupPaths   []string          // paths in /proc/self/cgroup
}

var namespaces = []string{"pid", "mnt", "net", "uts", "ipc", "user", "cgroup"}

func TestPosture(t *testing.T) {
	sb := newSandbox(t, runtime.Limits{})
	script := `grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|SigIgn):' /proc/self/status
echo "uid: $(id -u)"
echo "uidmap: $(cat /proc/self/uid_map)"
for n in ` + strings.Join(namespaces, " ") + `; do echo "ns $n: $(readlink /proc/self/ns/$n)"; done
sed 's/^/cgroup: /' /proc/self/cgroup`
	out := mustSh(t, sb, script)

	got := posture{Status: map[string]string{}, SameNamespace: map[string]bool{}}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch {
		case k == "uid":
			got.UID = v
		case k == "uidmap":
			f := strings.Fields(v)
			if len(f) != 3 {
				t.Fatalf("uid_map line %q", v)
			}
			got.HostUIDZero = f[1] == "0"
		case strings.HasPrefix(k, "ns "):
			n := strings.TrimPrefix(k, "ns ")
			host, err := os.Readlink("/proc/self/ns/" + n)
			if err != nil {
				t.Fatal(err)
			}
			got.SameNamespace[n] = host == v
		case k == "cgroup":
			// "hierarchy-id:controllers:path"; only the path matters.
			got.CgroupPaths = append(got.CgroupPaths, v[strings.LastIndex(v, ":")+1:])
		default:
			got.Status[k] = v
		}
	}

	want := posture{
		Status: map[string]string{
			"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
			"CapBnd": "0000000000000000", "CapAmb": "0000000000000000",
			"NoNewPrivs": "1", "Seccomp": "2",
			// Nothing inherited as ignored from the agent.
			"SigIgn": "0000000000000000",
		},
		UID:           strconv.Itoa(1000),
		HostUIDZero:   false,
		SameNamespace: map[string]bool{},
	}
	for _, n := range namespaces {
		want.SameNamespace[n] = false
	}
	// Every cgroup line must read "/": the host's path stays hidden.
	for range got.CgroupPaths {
		want.CgroupPaths = append(want.CgroupPaths, "/")
	}
	if len(got.CgroupPaths) == 0 {
		t.Error("no /proc/self/cgroup lines collected")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sandbox posture differs from the configuration (-want +got):\n%s", diff)
	}
}
