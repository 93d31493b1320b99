package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/airlockhq/airlock/internal/cast"
)

func replayCmd(args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	speed := fs.Float64("speed", 1, "play `N` times as fast as recorded")
	idle := duration(fs, "idle-limit", 0, 0, 0, "cut pauses longer than `DUR`, e.g. 2s (0: keep them)")
	execID := fs.String("exec", "", "replay one command, `EXEC_ID`, instead of the whole sandbox")
	out := fs.String("out", "", "write the asciicast v2 file to `FILE` (\"-\": stdout) instead of playing it")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: airlock replay [flags] ID [SESSION]

Play back what a sandbox's terminal session printed, or one command's
output (--exec), or everything the sandbox's commands and sessions
printed, with its recorded timing. The recording is read from the
sandbox's audit log, so it outlives the sandbox. --out saves it as an
asciicast v2 file, which asciinema can play.`)
		fs.PrintDefaults()
	}
	pos, rest, err := parseArgs(fs, args, 2)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(rest) != 0 {
		return usageError(fs)
	}
	bad := func(format string, a ...any) error {
		fmt.Fprintf(fs.Output(), "airlock replay: "+format+"\n", a...)
		return exitError(2)
	}
	switch {
	case len(pos) == 2 && *execID != "":
		return bad("--exec names a command; a session (%s) cannot be given with it", pos[1])
	case !(*speed > 0) || math.IsInf(*speed, 0):
		return bad("--speed %v: want a positive number, e.g. 2", *speed)
	}
	ctx, stop := remoteContext()
	defer stop()
	c := remote()
	var rc io.ReadCloser
	if len(pos) == 2 {
		rc, err = c.SessionCast(ctx, pos[0], pos[1])
	} else {
		rc, err = c.AuditCast(ctx, pos[0], *execID)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	if *out != "" {
		return saveCast(rc, *out)
	}
	rec, err := cast.Parse(rc)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	err = cast.Play(ctx, os.Stdout, rec, *speed, *idle)
	if ctx.Err() != nil {
		return exitError(130) // interrupted, as a shell reports SIGINT
	}
	return err
}

// saveCast copies the cast file to path ("-": stdout); a file cut short
// by an error is removed.
func saveCast(r io.Reader, path string) error {
	if path == "-" {
		_, err := io.Copy(os.Stdout, r)
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}
