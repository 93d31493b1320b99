package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/audit"
)

const auditUsage = `Usage:
  airlock audit ID [flags]            print a sandbox's audit log
  airlock audit verify ID|FILE        check a log against its hash chain: on the
                                      server, or an exported FILE offline
                                      (--key FINGERPRINT: it must be signed so)
  airlock audit key                   the fingerprint of the key that signs exports
  airlock audit export ID [-o FILE]   write the log as one .tar.gz (manifest.json,
                                      events.jsonl, casts) to FILE or stdout
`

func auditCmd(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "verify":
			return auditVerifyCmd(args[1:])
		case "export":
			return auditExportCmd(args[1:])
		case "key":
			return auditKeyCmd(args[1:])
		}
	}
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	types := fs.String("type", "", "only these event types, comma-separated (e.g. exec.started,exec.exited)")
	from := fs.String("from", "", "only events at or after this time (RFC 3339, or a duration ago such as 10m)")
	to := fs.String("to", "", "only events before this time (RFC 3339, or a duration ago)")
	asJSON := fs.Bool("json", false, "print the events as JSON lines, as stored")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), auditUsage+"\nFlags of airlock audit ID:\n")
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs)
	}
	q := client.AuditQuery{}
	if *types != "" {
		q.Types = strings.Split(*types, ",")
	}
	for _, p := range []struct {
		flag, v string
		t       *time.Time
	}{{"from", *from, &q.From}, {"to", *to, &q.To}} {
		if p.v == "" {
			continue
		}
		if *p.t, err = parseWhen(p.v); err != nil {
			fmt.Fprintf(os.Stderr, "airlock audit: --%s: %v\n", p.flag, err)
			return exitError(2)
		}
	}
	ctx, stop := remoteContext()
	defer stop()
	enc := jsonEncoder(os.Stdout)
	return remote().AuditLog(ctx, pos[0], q, func(e client.AuditEvent) error {
		if *asJSON {
			return enc.Encode(e)
		}
		_, err := fmt.Printf("%5d  %s  %-18s  %-12s  %s\n", e.Seq, e.Time.Local().Format("2006-01-02 15:04:05.000"), e.Type, e.Actor, summary(e.Data))
		return err
	})
}

// parseWhen reads an RFC 3339 time or a duration (durationSyntax) before
// now.
func parseWhen(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := parseDuration(v); err == nil {
		return time.Now().Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration (%s)", v, durationSyntax)
}

// summary is an event's data on one line, output shortened.
func summary(data json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return string(unescapeHTML(data))
	}
	if d, ok := m["data"].(string); ok && len(d) > 60 {
		m["data"] = d[:60] + "…"
	}
	b, _ := marshalJSON(m)
	return string(b)
}

func auditVerifyCmd(args []string) error {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	key := fs.String("key", "", "for a FILE: the fingerprint (airlock audit key) of the server that must have signed it")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), auditUsage+"\nFlags of airlock audit verify:\n")
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs)
	}
	var res client.AuditVerify
	if f, err := os.Open(pos[0]); err == nil {
		// An exported file, checked here without a server.
		defer f.Close()
		m, r, err := audit.VerifyArchive(f)
		if err != nil {
			return err
		}
		fmt.Printf("sandbox %s (tenant %s), exported %s\n", m.Sandbox, m.Tenant, m.ExportedAt.Local().Format(time.DateTime))
		res = client.AuditVerify{OK: r.OK, Events: r.Events, FirstBadSeq: r.FirstBadSeq, Reason: r.Reason}
		switch {
		case m.Signature == nil && *key != "":
			res.OK, res.Reason = false, "the export is not signed; --key asks for a signature"
		case m.Signature == nil:
			fmt.Println("unsigned: the chain shows the events fit together, not who exported them")
		case *key != "" && m.Signature.Fingerprint != *key:
			res.OK, res.Reason = false, "signed by "+m.Signature.Fingerprint+", not by "+*key
		case r.OK:
			fmt.Println("signed by", m.Signature.Fingerprint)
		}
	} else if !errors.Is(err, os.ErrNotExist) || strings.ContainsAny(pos[0], "/.") {
		return err
	} else if *key != "" {
		fmt.Fprintln(os.Stderr, "airlock audit verify: --key is for an exported FILE; the server checks its own log")
		return exitError(2)
	} else {
		ctx, stop := remoteContext()
		defer stop()
		if res, err = remote().VerifyAudit(ctx, pos[0]); err != nil {
			return err
		}
	}
	if !res.OK {
		if res.FirstBadSeq > 0 {
			fmt.Printf("FAILED: first bad event %d of %d: %s\n", res.FirstBadSeq, res.Events, res.Reason)
		} else {
			fmt.Printf("FAILED: %s\n", res.Reason)
		}
		return exitError(1)
	}
	fmt.Printf("ok: %s, chain intact\n", plural(int64(res.Events), "event"))
	return nil
}

func auditExportCmd(args []string) error {
	fs := flag.NewFlagSet("audit export", flag.ContinueOnError)
	out := fs.String("o", "", "write to this file instead of stdout")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), auditUsage+"\nFlags of airlock audit export:\n")
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs)
	}
	if *out == "" && term.IsTerminal(int(os.Stdout.Fd())) {
		fmt.Fprintln(os.Stderr, "airlock audit export: stdout is a terminal; redirect it (> run.tar.gz) or use -o FILE")
		return exitError(2)
	}
	ctx, stop := remoteContext()
	defer stop()
	body, err := remote().AuditExport(ctx, pos[0])
	if err != nil {
		return err
	}
	defer body.Close()
	var w io.Writer = os.Stdout
	if *out != "" {
		f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if _, err := io.Copy(w, body); err != nil {
		return err
	}
	return nil
}

func auditKeyCmd(args []string) error {
	fs := flag.NewFlagSet("audit key", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), auditUsage) }
	if err := noArgs(fs, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	k, err := remote().AuditKey(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("%s (%s %s)\n", k.Fingerprint, k.Alg, k.PublicKey)
	return nil
}
