package quota

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// mount is the part of one /proc/self/mountinfo line this package reads.
type mount struct {
	Point   string
	FSType  string
	Source  string
	Options []string // per-mount and superblock options together
}

// mountAt returns the filesystem mounted exactly at dir, the topmost one when
// several are stacked there.
func mountAt(dir string) (mount, bool, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return mount{}, false, fmt.Errorf("read mountinfo: %w", err)
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	var found mount
	ok := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := slices.Index(f, "-")
		if sep < 6 || len(f) < sep+4 {
			continue
		}
		if unescape(f[4]) != dir {
			continue
		}
		found = mount{
			Point:   dir,
			FSType:  f[sep+1],
			Source:  unescape(f[sep+2]),
			Options: append(strings.Split(f[5], ","), strings.Split(f[sep+3], ",")...),
		}
		ok = true
	}
	return found, ok, sc.Err()
}

// enforcesProjectQuota says whether m enforces project quotas: ext4 shows
// "prjquota" among its options, xfs "prjquota" or "pquota".
func (m mount) enforcesProjectQuota() bool {
	if m.FSType != "ext4" && m.FSType != "xfs" {
		return false
	}
	return slices.Contains(m.Options, "prjquota") || slices.Contains(m.Options, "pquota")
}

// unescape undoes the octal escapes (\040 for a space...) of mountinfo paths.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
