package quota

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestScratch(t *testing.T) {
	mnt := "/tmp/bt/mnt"
	root, err := os.Open(mnt)
	if err != nil { t.Fatal(err) }
	defer root.Close()
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("e%d", i)
		t0 := time.Now()
		err = createSubvolume(root, name)
		c := time.Since(t0)
		s, _ := os.Open(filepath.Join(mnt, name))
		id, _ := subvolumeID(s)
		s.Close()
		t1 := time.Now()
		err2 := limitQgroup(root, id, 32<<20)
		l := time.Since(t1)
		if i%2 == 1 {
			n, err := fill(filepath.Join(mnt, name, "f"), 4<<20)
			info, _, _ := readQgroupInfo(root, id)
			t.Logf("wrote %d %v usage now %+v", n, err, info)
			time.Sleep(200*time.Millisecond)
			info, _, _ = readQgroupInfo(root, id)
			b, _ := os.ReadFile(fmt.Sprintf("/sys/fs/btrfs/adbc68fd-c113-4864-bd9b-0fcd99daddbd/qgroups/0_%d/rsv_data", id))
			t.Logf("usage after 200ms %+v rsv_data %s", info, b)
		}
		t2 := time.Now()
		err3 := destroySubvolume(root, name)
		d := time.Since(t2)
		t3 := time.Now()
		err4 := removeQgroup(root, id)
		r := time.Since(t3)
		t.Logf("create %v %v limit %v %v destroy %v %v rmq %v %v", c, err, l, err2, d, err3, r, err4)
	}
}
