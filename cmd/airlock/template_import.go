package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/sandbox"
)

func templateImport(args []string) error {
	fs := flag.NewFlagSet("template import", flag.ContinueOnError)
	creds := fs.String("credentials", "", "a `SECRET` (user:password, or a token) bound to the registry's host")
	var allow listFlag
	fs.Var(&allow, "allow", "another `HOST` the pull may reach (an auth server, a blob CDN; repeatable)")
	insecure := fs.Bool("insecure", false, "pull over plain http (a registry on a private network)")
	desc := fs.String("description", "", "what the template is for")
	quiet := fs.Bool("q", false, "print no progress")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock template import NAME IMAGE|FILE [flags]\n\nMake a template from an OCI or Docker image: a registry reference, or a\n'docker save' / OCI layout tarball (a FILE that exists here).")
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, 2)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError(fs)
	}
	name, src := pos[0], pos[1]
	ctx, stop := remoteContext()
	defer stop()
	progress := func(p client.ImageProgress) {
		if *quiet {
			return
		}
		state := ""
		if p.Done {
			state = " done"
		}
		fmt.Fprintf(os.Stderr, "\rlayer %d/%d %s: %s of %s%s   ", p.Layer, p.Layers, shortDigest(p.Digest),
			sandbox.FormatBytes(p.Bytes), sandbox.FormatBytes(p.Total), state)
		if p.Done {
			fmt.Fprintln(os.Stderr)
		}
	}
	var t client.Template
	if f, ferr := os.Open(src); ferr == nil {
		defer f.Close()
		if *creds != "" || len(allow) > 0 || *insecure {
			return fmt.Errorf("--credentials, --allow and --insecure are for a registry; %s is a file", src)
		}
		t, err = remote().UploadImage(ctx, name, f, filepath.Base(src), *desc, progress)
	} else {
		t, err = remote().ImportImage(ctx, client.ImportImageRequest{Name: name, Image: src, Description: *desc,
			Credentials: *creds, Allow: allow, Insecure: *insecure}, progress)
	}
	if err != nil {
		return err
	}
	fmt.Printf("%s\t%s\t%s\n", t.Name, t.Digest, sandbox.FormatBytes(t.SizeBytes))
	return nil
}

func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	return d[:min(len(d), 12)]
}
