// Package mountinfo parses /proc/<pid>/mountinfo (proc(5)). It only reads;
// it never decides what a mount means for the caller.
package mountinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Mount is one line of mountinfo.
type Mount struct {
	Point   string // where it is mounted, unescaped
	Root    string // the path of the mounted tree's root inside its filesystem
	Options string // per-mount options, comma-separated
	FSType  string
	Source  string // unescaped
	Super   string // superblock options, comma-separated (cgroup v1 names its controllers here)
}

// HasOption reports whether opt is among the per-mount or superblock options.
func (m Mount) HasOption(opt string) bool {
	for _, list := range []string{m.Options, m.Super} {
		for _, o := range strings.Split(list, ",") {
			if o == opt {
				return true
			}
		}
	}
	return false
}

// Read parses this process's mount table.
func Read() ([]Mount, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return Parse(data)
}

// Parse reads the mountinfo format. A malformed line is an error rather than
// skipped: a decision taken on half a mount table (where cgroups live, what
// is already mounted) would be wrong without saying so.
func Parse(data []byte) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		// Optional fields end with "-"; the fixed ones before them are six.
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(f) < sep+3 {
			return nil, fmt.Errorf("mountinfo line %d: malformed", n)
		}
		m := Mount{
			Root:    Unescape(f[3]),
			Point:   Unescape(f[4]),
			Options: f[5],
			FSType:  f[sep+1],
			Source:  Unescape(f[sep+2]),
		}
		if len(f) > sep+3 {
			m.Super = f[sep+3]
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
}

// Unescape undoes the octal escapes (\040 for a space, \134 for a
// backslash...) the kernel writes for such bytes in paths.
func Unescape(s string) string {
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
