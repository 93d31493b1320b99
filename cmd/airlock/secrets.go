package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/airlockhq/airlock/client"
)

const secretsUsage = `Usage: airlock secrets set NAME --host HOST [--host HOST]... [--header H [--format F]] [--body] < value
       airlock secrets ls
       airlock secrets rm NAME...

Manage the tenant's secrets. The value is read from stdin and never shown
again. A sandbox created with --secret NAME holds a placeholder in $NAME;
the egress proxy swaps in the value on TLS requests to HOST. "set" on an
existing name rotates it.`

// maxSecretBytes bounds what "secrets set" reads from stdin; the server
// refuses more anyway.
const maxSecretBytes = 16 << 10

func secretsCmd(args []string) error {
	return subcommand("secrets", secretsUsage, args,
		verb{"set", secretsSet},
		verb{"ls", secretsLs},
		verb{"rm", secretsRm},
	)
}

func secretsSet(args []string) error {
	fs := flag.NewFlagSet("secrets set", flag.ContinueOnError)
	var hosts listFlag
	fs.Var(&hosts, "host", "host that receives the value: name, *.domain, optional :port (repeatable)")
	header := fs.String("header", "", "also set this header on requests to HOST that lack it")
	format := fs.String("format", "", `the header's value, with {value} for the secret (default "{value}")`)
	body := fs.Bool("body", false, "also replace the placeholder in request bodies")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), secretsUsage)
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs)
	}
	value, err := readSecretValue()
	if err != nil {
		return err
	}
	var inject *client.SecretInject
	if *header != "" {
		inject = &client.SecretInject{Header: *header, Format: *format}
	}
	ctx, stop := remoteContext()
	defer stop()
	c := remote()
	// Without --host it can only be a rotation; with it, a create that
	// turns into a rotation if the name exists.
	err = client.ErrConflict
	if len(hosts) > 0 {
		_, err = c.CreateSecret(ctx, client.SecretRequest{Name: pos[0], Value: value, Hosts: hosts, Inject: inject, Body: *body})
	}
	if errors.Is(err, client.ErrConflict) {
		req := client.RotateSecretRequest{Value: value, Inject: inject}
		if len(hosts) > 0 {
			req.Hosts = hosts
		}
		if isSet(fs, "body") {
			req.Body = body
		}
		if _, err = c.RotateSecret(ctx, pos[0], req); err == nil {
			fmt.Fprintf(os.Stderr, "airlock: secret %s rotated\n", pos[0])
		}
		return err
	}
	return err
}

// readSecretValue reads the value from stdin, never from an argument
// (which would land in shell history and ps output). One trailing newline,
// as `echo` and editors add, is dropped.
func readSecretValue() (string, error) {
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		fmt.Fprint(os.Stderr, "value (then Ctrl-D): ")
	}
	b, err := io.ReadAll(io.LimitReader(os.Stdin, maxSecretBytes+2))
	if err != nil {
		return "", fmt.Errorf("read the value from stdin: %w", err)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	switch {
	case v == "":
		return "", errors.New("no value on stdin: pipe it in, e.g. airlock secrets set NAME --host H < file")
	case len(v) > maxSecretBytes:
		return "", fmt.Errorf("the value is over %d bytes", maxSecretBytes)
	}
	return v, nil
}

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func secretsLs(args []string) error {
	fs := flag.NewFlagSet("secrets ls", flag.ContinueOnError)
	if err := noArgs(fs, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	list, err := remote().ListSecrets(ctx)
	if err != nil {
		return err
	}
	tw := table("NAME\tHOSTS\tINJECT\tCREATED\tROTATED")
	for _, s := range list {
		inject := "-"
		if s.Inject != nil {
			inject = s.Inject.Header
		}
		rotated := "-"
		if !s.RotatedAt.IsZero() {
			rotated = timeCell(s.RotatedAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, strings.Join(s.Hosts, ","), inject, timeCell(s.CreatedAt), rotated)
	}
	return tw.Flush()
}

func secretsRm(args []string) error {
	fs := flag.NewFlagSet("secrets rm", flag.ContinueOnError)
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError(fs)
	}
	ctx, stop := remoteContext()
	defer stop()
	var errs []error
	for _, name := range pos {
		if err := remote().DeleteSecret(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
