package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

const eventsUsage = `Usage: airlock events [--after ID | --all] [--type TYPE]... [--json]

Follow the tenant's events (sandbox.created, sandbox.expired,
sandbox.destroyed, sandbox.failed, exec.exited, session.ended): one line
per event, or the event as JSON with --json. --after resumes after an
event id (the server keeps 7 days of them); --all replays every kept
event first. A dropped stream is resumed where it broke, until Ctrl-C.`

func eventsCmd(args []string) error {
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	after := fs.Int64("after", 0, "resume after this event id")
	all := fs.Bool("all", false, "replay every event the server kept, then follow")
	asJSON := fs.Bool("json", false, "print each event as a JSON line")
	var types listFlag
	fs.Var(&types, "type", "only events of this type (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), eventsUsage)
		fs.PrintDefaults()
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	c := remote()
	enc := jsonEncoder(os.Stdout)
	show := func(e client.Event) error {
		if *asJSON {
			return enc.Encode(e)
		}
		_, err := fmt.Printf("%s  %d  %-17s  %s  %s\n", e.Time.UTC().Format(time.RFC3339), e.ID, e.Type, e.SandboxID, unescapeHTML(e.Data))
		return err
	}
	opts := client.EventsOptions{After: *after, FromStart: *all && *after == 0, Types: types}
	for {
		last, err := c.Events(ctx, opts, show)
		if ctx.Err() != nil {
			return nil
		}
		var ae *client.Error
		if errors.As(err, &ae) && ae.Status/100 == 4 {
			return err // bad flag or credential: trying again will not help
		}
		if last > 0 {
			opts.After, opts.FromStart = last, false
		}
		fmt.Fprintf(os.Stderr, "airlock: event stream: %v; resuming\n", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

const webhooksUsage = `Usage: airlock webhooks add URL [--event TYPE]... [--secret-stdin] [--json]
       airlock webhooks ls
       airlock webhooks rm ID...
       airlock webhooks deliveries ID [--limit N] [--json]

Deliver the tenant's events to a URL: a POST of the event as JSON, signed
with Airlock-Signature: t=UNIX,v1=hex(HMAC-SHA256(secret, t "." body)),
retried with backoff for 24 hours. "add" prints the secret once; without
--secret-stdin the server makes one.`

func webhooksCmd(args []string) error {
	return subcommand("webhooks", webhooksUsage, args,
		verb{"add", webhooksAdd},
		verb{"ls", webhooksLs},
		verb{"rm", webhooksRm},
		verb{"deliveries", webhooksDeliveries},
	)
}

func webhooksAdd(args []string) error {
	fs := flag.NewFlagSet("webhooks add", flag.ContinueOnError)
	var types listFlag
	fs.Var(&types, "event", `event type to deliver, or "*" (repeatable; default "*")`)
	secretStdin := fs.Bool("secret-stdin", false, "read the signing secret from stdin (16-256 bytes)")
	asJSON := fs.Bool("json", false, "print the webhook as JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), webhooksUsage)
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs)
	}
	req := client.WebhookRequest{URL: pos[0], Events: types}
	if len(req.Events) == 0 {
		req.Events = []string{"*"}
	}
	if *secretStdin {
		// Like a secret's value: never an argument (shell history, ps).
		if req.Secret, err = readSecretValue(); err != nil {
			return err
		}
	}
	ctx, stop := remoteContext()
	defer stop()
	w, err := remote().CreateWebhook(ctx, req)
	if err != nil {
		return err
	}
	if *asJSON {
		return jsonEncoder(os.Stdout).Encode(w)
	}
	fmt.Printf("id:     %s\nsecret: %s\n", w.ID, w.Secret)
	fmt.Fprintln(os.Stderr, "airlock: the secret is not shown again")
	return nil
}

func webhooksLs(args []string) error {
	fs := flag.NewFlagSet("webhooks ls", flag.ContinueOnError)
	if err := noArgs(fs, args); err != nil {
		return err
	}
	ctx, stop := remoteContext()
	defer stop()
	list, err := remote().ListWebhooks(ctx)
	if err != nil {
		return err
	}
	tw := table("ID\tURL\tEVENTS\tCREATED")
	for _, w := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", w.ID, w.URL, strings.Join(w.Events, ","), timeCell(w.CreatedAt))
	}
	return tw.Flush()
}

func webhooksRm(args []string) error {
	fs := flag.NewFlagSet("webhooks rm", flag.ContinueOnError)
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
	for _, id := range pos {
		if err := remote().DeleteWebhook(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func webhooksDeliveries(args []string) error {
	fs := flag.NewFlagSet("webhooks deliveries", flag.ContinueOnError)
	limit := fs.Int("limit", 20, "how many, newest first (1-1000)")
	asJSON := fs.Bool("json", false, "print each delivery, attempts included, as a JSON line")
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs)
	}
	ctx, stop := remoteContext()
	defer stop()
	list, err := remote().WebhookDeliveries(ctx, pos[0], 0, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSONLines(list)
	}
	tw := table("DELIVERY\tEVENT\tTYPE\tSTATE\tATTEMPTS\tLAST")
	for _, d := range list {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\n", d.ID, d.EventID, d.EventType, d.State, len(d.Attempts), lastAttempt(d))
	}
	return tw.Flush()
}

// lastAttempt sums up a delivery's newest attempt: its status or error.
func lastAttempt(d client.WebhookDelivery) string {
	if len(d.Attempts) == 0 {
		return "-"
	}
	a := d.Attempts[len(d.Attempts)-1]
	s := timeCell(a.Time)
	if a.Status != 0 {
		s += fmt.Sprintf(" HTTP %d", a.Status)
	}
	if a.Error != "" && a.Status == 0 {
		s += " " + a.Error
	}
	return s
}
