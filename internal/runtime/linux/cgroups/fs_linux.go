package cgroups

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// write sets one cgroup file. It never creates the file: a missing file means
// a missing controller or group, which the caller must hear about.
func write(dir, file, value string) error {
	path := filepath.Join(dir, file)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

func exists(dir, file string) bool {
	_, err := os.Stat(filepath.Join(dir, file))
	return err == nil
}

// readProcs lists the pids in a group; a group that no longer exists holds
// none, which keeps Kill and Destroy idempotent.
func readProcs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	// ENODEV: removed between the open and the read.
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENODEV) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read procs: %w", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("read procs %s: bad pid %q", dir, f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// reader reads numbers from cgroup files, keeping the first error so a Stats
// call reads as a list of fields.
type reader struct{ err error }

// int reads a file holding one number ("max" reads as -1).
func (r *reader) int(dir, file string) int64 {
	if r.err != nil {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		r.err = fmt.Errorf("read %s: %w", file, err)
		return 0
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		r.err = fmt.Errorf("read %s: %w", file, err)
	}
	return v
}

// key reads the value of one "key value" line, as in memory.events or
// cpu.stat; a missing key reads as 0 because the kernel omits zero counters
// in some versions.
func (r *reader) key(dir, file, key string) int64 {
	if r.err != nil {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		r.err = fmt.Errorf("read %s: %w", file, err)
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				r.err = fmt.Errorf("read %s %s: %w", file, key, err)
			}
			return n
		}
	}
	return 0
}
