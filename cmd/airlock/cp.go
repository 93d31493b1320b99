package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/airlockhq/airlock/client"
)

func cpCmd(args []string) error {
	fset := flag.NewFlagSet("cp", flag.ContinueOnError)
	fset.Usage = func() {
		fmt.Fprintln(fset.Output(), `Usage: airlock cp LOCAL ID:PATH
       airlock cp ID:PATH LOCAL

Copy a file into or out of a sandbox. LOCAL "-" is stdin or stdout; write a
local path that has a colon as ./a:b. A relative PATH is in /home/user.`)
	}
	pos, _, err := parseArgs(fset, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError(fset)
	}
	srcID, srcPath, srcRemote := splitRemote(pos[0])
	dstID, dstPath, dstRemote := splitRemote(pos[1])
	if srcRemote == dstRemote || srcRemote && srcPath == "" || dstRemote && dstPath == "" {
		return usageError(fset)
	}
	ctx, stop := remoteContext()
	defer stop()
	c := remote()
	if dstRemote {
		return sandboxErr(ctx, c, dstID, upload(ctx, c, pos[0], dstID, dstPath))
	}
	return sandboxErr(ctx, c, srcID, download(ctx, c, srcID, srcPath, pos[1]))
}

// splitRemote reads ID:PATH. "-", and paths starting with "/" or ".", are
// local whatever colons they hold.
func splitRemote(arg string) (id, p string, ok bool) {
	if arg == "-" || strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, ".") {
		return "", "", false
	}
	id, p, ok = strings.Cut(arg, ":")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", "", false
	}
	return id, p, true
}

// upload sends local (a file, or stdin for "-") to p, keeping the file's
// permissions; a p ending in "/" is a directory to copy into.
func upload(ctx context.Context, c *client.Client, local, id, p string) error {
	var r io.Reader = os.Stdin
	var mode fs.FileMode
	if local != "-" {
		f, err := os.Open(local)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if st.IsDir() {
			return fmt.Errorf("%s is a directory: cp copies files", local)
		}
		r, mode = f, st.Mode().Perm()
		if strings.HasSuffix(p, "/") {
			p += filepath.Base(local)
		}
	}
	_, err := c.WriteFile(ctx, id, p, r, mode)
	return err
}

// download writes p to local (stdout for "-"), or into local if it is a
// directory.
func download(ctx context.Context, c *client.Client, id, p, local string) error {
	if local == "-" {
		_, err := c.ReadFile(ctx, id, p, os.Stdout)
		return err
	}
	if st, err := os.Stat(local); err == nil && st.IsDir() {
		local = filepath.Join(local, path.Base(p))
	}
	w := &lazyFile{name: local}
	_, err := c.ReadFile(ctx, id, p, w)
	if err == nil && w.f == nil {
		_, err = w.Write(nil) // an empty file
	}
	if w.f != nil {
		if cerr := w.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(local) // a partial copy would pass for a whole one
		}
	}
	return err
}

// lazyFile creates its file at the first write, so that an error answer
// (a wrong id or path) leaves a file of the same name untouched.
type lazyFile struct {
	name string
	f    *os.File
}

func (l *lazyFile) Write(p []byte) (int, error) {
	if l.f == nil {
		f, err := os.Create(l.name)
		if err != nil {
			return 0, err
		}
		l.f = f
	}
	return l.f.Write(p)
}
