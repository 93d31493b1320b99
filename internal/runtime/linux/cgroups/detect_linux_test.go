package cgroups

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/runtime/linux/mountinfo"
)

const (
	hybridMounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	v1Mounts = `25 21 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,xattr,name=systemd
29 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,cpu,cpuacct
30 25 0:27 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,memory
31 25 0:28 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,pids
32 25 0:29 / /sys/fs/cgroup/free\040zer rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,freezer,clone_children
`
	v2Mounts = `22 26 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
27 22 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
)

func TestLayout(t *testing.T) {
	known := map[string]bool{"cpu": true, "cpuacct": true, "memory": true, "pids": true, "freezer": true}
	tests := []struct {
		name   string
		mounts string
		v2ctl  []string
		want   Info
	}{{
		name:   "hybrid",
		mounts: hybridMounts,
		v2ctl:  []string{"hugetlb"},
		want: Info{Version: Hybrid, Unified: "/sys/fs/cgroup/unified", Controllers: map[string]string{
			"cpu":     "/sys/fs/cgroup/cpu",
			"cpuacct": "/sys/fs/cgroup/cpuacct",
			"memory":  "/sys/fs/cgroup/memory",
			"freezer": "/sys/fs/cgroup/freezer",
			"pids":    "/sys/fs/cgroup/pids",
			"hugetlb": "/sys/fs/cgroup/unified",
		}},
	}, {
		name:   "v1 co-mounted, escaped path, mount options",
		mounts: v1Mounts,
		want: Info{Version: V1, Controllers: map[string]string{
			"cpu":     "/sys/fs/cgroup/cpu,cpuacct",
			"cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
			"memory":  "/sys/fs/cgroup/memory",
			"pids":    "/sys/fs/cgroup/pids",
			"freezer": "/sys/fs/cgroup/free zer",
		}},
	}, {
		name:   "v2",
		mounts: v2Mounts,
		v2ctl:  []string{"cpuset", "cpu", "io", "memory", "pids"},
		want: Info{Version: V2, Unified: "/sys/fs/cgroup", Controllers: map[string]string{
			"cpuset": "/sys/fs/cgroup",
			"cpu":    "/sys/fs/cgroup",
			"io":     "/sys/fs/cgroup",
			"memory": "/sys/fs/cgroup",
			"pids":   "/sys/fs/cgroup",
		}},
	}, {
		name:   "none",
		mounts: "22 26 0:21 / /sys rw - sysfs sysfs rw\n",
		want:   Info{Controllers: map[string]string{}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mounts, err := mountinfo.Parse([]byte(tt.mounts))
			if err != nil {
				t.Fatal(err)
			}
			got := layout(mounts, known, tt.v2ctl)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("layout (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanHybridUsesUnifiedForKill(t *testing.T) {
	mounts, err := mountinfo.Parse([]byte(hybridMounts))
	if err != nil {
		t.Fatal(err)
	}
	info := layout(mounts, nil, []string{"hugetlb"})
	info.Kill = true
	c, err := plan(info, "sb-1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/sys/fs/cgroup/unified/airlock/sb-1",
		"/sys/fs/cgroup/memory/airlock/sb-1",
		"/sys/fs/cgroup/cpu/airlock/sb-1",
		"/sys/fs/cgroup/pids/airlock/sb-1",
		"/sys/fs/cgroup/cpuacct/airlock/sb-1",
	}
	if diff := cmp.Diff(want, c.dirs); diff != "" {
		t.Errorf("dirs (-want +got):\n%s", diff)
	}
}

func TestPlanMissingController(t *testing.T) {
	mounts, err := mountinfo.Parse([]byte(v2Mounts))
	if err != nil {
		t.Fatal(err)
	}
	_, err = plan(layout(mounts, nil, []string{"memory", "cpu"}), "sb-1")
	if !errors.Is(err, runtime.ErrUnsupported) {
		t.Fatalf("plan without pids: got %v, want ErrUnsupported", err)
	}
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add([]byte(hybridMounts))
	f.Add([]byte(v1Mounts))
	f.Add([]byte(`1 2 0:1 / /a\134b\04 rw - cgroup cgroup rw,memory`))
	f.Fuzz(func(t *testing.T, data []byte) {
		mounts, err := mountinfo.Parse(data)
		if err == nil {
			layout(mounts, nil, nil)
		}
	})
}
