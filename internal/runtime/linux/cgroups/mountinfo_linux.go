package cgroups

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// mount is the part of one /proc/self/mountinfo line this package reads.
type mount struct {
	Point  string // where it is mounted
	FSType string // cgroup or cgroup2
	Super  string // superblock options; for cgroup v1 they name the controllers
}

// parseMountinfo reads the format described in proc(5). Malformed lines are an
// error rather than skipped: a layout guessed from half a file would place
// sandboxes in the wrong groups.
func parseMountinfo(data []byte) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		sep := -1
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+3 {
			return nil, fmt.Errorf("mountinfo line %d: malformed", n)
		}
		super := ""
		if len(fields) > sep+3 {
			super = fields[sep+3]
		}
		out = append(out, mount{
			Point:  unescape(fields[4]),
			FSType: fields[sep+1],
			Super:  super,
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
}

// unescape undoes the octal escapes (\040 for a space...) the kernel uses
// for white space and backslashes in mountinfo paths.
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
