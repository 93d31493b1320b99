package mountinfo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	data := []byte(`36 35 98:0 /mnt1 /mnt/with\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue
24 30 0:21 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
25 30 0:22 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`)
	got, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{Point: "/mnt/with space", Root: "/mnt1", Options: "rw,noatime", FSType: "ext3", Source: "/dev/root", Super: "rw,errors=continue"},
		{Point: "/sys/fs/cgroup/memory", Root: "/", Options: "rw,relatime", FSType: "cgroup", Source: "cgroup", Super: "rw,memory"},
		{Point: "/sys/fs/cgroup/unified", Root: "/", Options: "rw,relatime", FSType: "cgroup2", Source: "cgroup2", Super: "rw"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !got[1].HasOption("memory") || got[1].HasOption("mem") {
		t.Errorf("HasOption")
	}
	for _, bad := range []string{"1 2 3\n", "1 2 3 4 5 6 7 8\n", "1 2 3 4 5 6 - ext4\n"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) accepted a malformed line", bad)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw\n"))
	f.Add([]byte(`1 2 3 4 /a\134b\0 o - t s\040x o` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := Parse(data)
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.FSType == "" {
				t.Errorf("mount without a type: %+v", m)
			}
		}
	})
}
