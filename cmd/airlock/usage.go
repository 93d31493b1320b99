package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// metricsCmd prints what one sandbox used.
func metricsCmd(args []string) error {
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the metrics as JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock metrics ID [--json]\n\nPrint what a sandbox used: live while it runs, final once it has ended.\n"+
			"TOKENS are its model calls' input, cached input and output tokens, counted at its egress proxy;\n"+
			"COST is by the server's price table (- without one).")
		fs.PrintDefaults()
	}
	pos, _, err := parseArgs(fs, args, -1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(fs)
	}
	ctx, stop := remoteContext()
	defer stop()
	m, err := remote().SandboxMetrics(ctx, pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return printMeteringJSON(m)
	}
	state := m.State
	if !m.Final {
		state += " (live)"
	}
	tw := table("SANDBOX\tSTATE\tCPU\tMEMORY PEAK\tWALL\tEGRESS OUT\tEGRESS IN\tEXECS\tMODEL CALLS\tTOKENS\tCOST")
	fmt.Fprintf(tw, "%s\t%s\t%.2fs\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", m.SandboxID, state, m.CPUSeconds, bytesCell(m.MemoryPeakBytes),
		(time.Duration(m.WallSeconds * float64(time.Second))).Round(time.Second), bytesCell(m.EgressBytesOut), bytesCell(m.EgressBytesIn), m.ExecCount,
		callsCell(m.Model), tokensCell(m.Model), costCell(m.CostUSD))
	return tw.Flush()
}

// usageCmd prints usage per tenant over a window.
func usageCmd(args []string) error {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	from := fs.String("from", "", "sandboxes created at or after this time: RFC 3339 or a UTC date (2026-01-31); default: all")
	to := fs.String("to", "", "sandboxes created before this time (RFC 3339 or a UTC date); default: now")
	tenant := fs.String("tenant", "", "only this tenant id (an admin key sees every tenant without it)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock usage [--from T] [--to T] [--tenant ID] [--json]\n\n"+
			"Print usage summed per tenant over the sandboxes created in [from, to), and what the server keeps\n"+
			"for each tenant now (STORED: what its storage quota counts). TOKENS are the model calls' input, cached\n"+
			"input and output tokens, counted at the egress proxy; COST is by the server's price table (- without one).")
		fs.PrintDefaults()
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	var window [2]time.Time
	for i, p := range []struct{ flag, v string }{{"from", *from}, {"to", *to}} {
		if p.v == "" {
			continue
		}
		t, err := parseUsageTime(p.v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "airlock usage: --%s: %v\n", p.flag, err)
			return exitError(2)
		}
		window[i] = t
	}
	ctx, stop := remoteContext()
	defer stop()
	rep, err := remote().Usage(ctx, window[0], window[1], *tenant)
	if err != nil {
		return err
	}
	if *asJSON {
		return printMeteringJSON(rep)
	}
	tw := table("TENANT\tSANDBOXES\tSANDBOX-HOURS\tCPU\tMEMORY PEAK\tEGRESS OUT\tEGRESS IN\tEXECS\tSTORED\tMODEL CALLS\tTOKENS\tCOST")
	for _, u := range rep.Tenants {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.2fs\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", u.TenantID, u.Sandboxes, u.SandboxHours, u.CPUSeconds,
			bytesCell(u.MemoryPeakBytes), bytesCell(u.EgressBytesOut), bytesCell(u.EgressBytesIn), u.ExecCount, bytesCell(u.StorageBytes),
			callsCell(u.Model), tokensCell(u.Model), costCell(u.CostUSD))
	}
	return tw.Flush()
}

// parseUsageTime reads an RFC 3339 time or a date, taken as midnight UTC
// (usage windows are billing periods, the same wherever they are asked
// from).
func parseUsageTime(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time (2026-01-31T12:00:00Z) or a date (2026-01-31)", v)
}

// bytesCell is a byte count in binary units.
func bytesCell(n int64) string { return sandbox.FormatBytes(n) }

func printMeteringJSON(v any) error {
	enc := jsonEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
