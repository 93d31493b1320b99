//go:build linux

// Command restrict is the landlock test's subject: tests build it
// statically, as the sandbox init is built, because a test binary linked
// with cgo (-race) cannot restrict every thread. It restricts itself to
// read-only "/" and read-write paths, then reports what it can still do as
// one JSON object of check name to "ok" or an errno name.
//
//	restrict RWDIR OTHERDIR RWFILE READFILE
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/runtime/linux/landlock"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "_write" {
		// A child started after Restrict: it must inherit the domain.
		if err := os.WriteFile(os.Args[2], []byte("x"), 0o644); err != nil {
			fmt.Println(result(err))
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: restrict RWDIR OTHERDIR RWFILE READFILE")
		os.Exit(2)
	}
	rw, other, rwFile, readFile := os.Args[1], os.Args[2], os.Args[3], os.Args[4]

	// Threads that exist before Restrict must be confined too.
	type req struct {
		path string
		done chan error
	}
	reqs := make(chan req)
	for i := 0; i < 4; i++ {
		go func() {
			runtime.LockOSThread()
			for r := range reqs {
				r.done <- os.WriteFile(r.path, []byte("x"), 0o644)
			}
		}()
	}

	abi, err := landlock.Restrict([]string{"/", "/nonexistent-airlock-path"}, []string{rw, rwFile})
	if err != nil {
		fmt.Fprintln(os.Stderr, "restrict:", err)
		os.Exit(3)
	}
	got := map[string]string{}
	got["abi matches"] = result(check(abi == landlock.ABI()))
	got["write in rw dir"] = result(os.WriteFile(filepath.Join(rw, "a"), []byte("x"), 0o644))
	got["mkdir in rw dir"] = result(os.Mkdir(filepath.Join(rw, "d"), 0o755))
	got["remove in rw dir"] = result(os.Remove(filepath.Join(rw, "a")))
	got["write in other dir"] = result(os.WriteFile(filepath.Join(other, "a"), []byte("x"), 0o644))
	got["mkdir in other dir"] = result(os.Mkdir(filepath.Join(other, "d"), 0o755))
	got["write rw file"] = result(os.WriteFile(rwFile, []byte("y"), 0o644))
	got["truncate read-only file"] = result(os.Truncate(readFile, 0))
	got["rename rw to other"] = result(os.Rename(filepath.Join(rw, "d"), filepath.Join(other, "d")))
	_, err = os.ReadFile(readFile)
	got["read file"] = result(err)
	_, err = os.ReadDir(other)
	got["list other dir"] = result(err)
	for i := 0; i < 4; i++ {
		r := req{filepath.Join(other, fmt.Sprintf("t%d", i)), make(chan error)}
		reqs <- r
		if err := <-r.done; result(err) != "EACCES" {
			got["older thread confined"] = result(err)
		}
	}
	if _, ok := got["older thread confined"]; !ok {
		got["older thread confined"] = "ok"
	}
	close(reqs)
	self, err := os.Executable()
	var out []byte
	if err == nil {
		out, err = exec.Command(self, "_write", filepath.Join(other, "child")).Output()
	}
	switch {
	case err == nil:
		got["child write in other dir"] = "ok"
	case len(out) > 0:
		got["child write in other dir"] = strings.TrimSpace(string(out))
	default:
		got["child write in other dir"] = err.Error()
	}
	json.NewEncoder(os.Stdout).Encode(got)
}

func check(ok bool) error {
	if ok {
		return nil
	}
	return errors.New("no")
}

func result(err error) string {
	var errno unix.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	}
	return err.Error()
}
