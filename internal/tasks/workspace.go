package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// Bounds of what a task keeps. Past them the artifact (or the diff) is
// cut and marked truncated, and files beyond MaxArtifactFiles are left
// out (said in a raw event).
const (
	MaxArtifactBytes = 8 << 20
	MaxArtifactTotal = 32 << 20
	MaxArtifactFiles = 1000
	MaxDiffBytes     = 8 << 20
)

// The workspace's starting state is a commit in a git directory outside
// it (stateDir/git). Git never looks inside a ".git" (the user's own
// repository is neither read nor changed), honours the workspace's
// .gitignore files, and is run with no system or global configuration and
// no hooks, so nothing the harness wrote into the home directory changes
// how the diff is made. The sandbox sees the host's /usr, so git is there.
const gitEnv = `set -e
export GIT_DIR=` + stateDir + `/git GIT_WORK_TREE=` + Workspace + `
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0
export GIT_AUTHOR_NAME=airlock GIT_AUTHOR_EMAIL=airlock@localhost
export GIT_COMMITTER_NAME=airlock GIT_COMMITTER_EMAIL=airlock@localhost
g() { git -c core.hooksPath=/dev/null -c core.quotepath=off -c core.autocrlf=false "$@"; }
cd ` + Workspace + `
`

const snapshotScript = gitEnv + `mkdir -p ` + stateDir + `
g init -q
g add -A .
g commit -q --allow-empty --no-verify -m start
`

// collectScript stages everything (new files too) and writes the diff
// against the start and the list of changed paths.
const collectScript = gitEnv + `g add -A .
g diff --cached --no-color --no-ext-diff --no-renames --binary HEAD > ` + stateDir + `/diff
g diff --cached --no-renames --name-status -z HEAD > ` + stateDir + `/changes
`

// git runs a script of the snapshot (as the sandbox user, in the
// workspace) and turns a failure into an error with its output.
func (r *taskRun) git(ctx context.Context, sbID, script string) error {
	res, err := r.s.m.Exec(ctx, r.c, sbID, sandbox.ExecRequest{Cmd: []string{"sh", "-c", script}, TimeoutS: 120})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 || res.TimedOut {
		return fmt.Errorf("git snapshot exited %d: %s", res.ExitCode, strings.TrimSpace(truncUTF8(res.Stderr+res.Stdout, 2048)))
	}
	return nil
}

// collect stores the workspace's diff against its start, a file_change
// event per changed path, and the files the artifact patterns match. A
// part that fails (the harness may have broken the snapshot) is said in a
// raw event and the others are still kept.
func (r *taskRun) collect(ctx context.Context, sbID string) error {
	if err := r.git(ctx, sbID, collectScript); err != nil {
		r.note(sbID, "no workspace diff: %v", err)
	}
	var arts []taskrec.Artifact
	if diff, err := r.read(ctx, sbID, stateDir+"/diff", MaxDiffBytes); err != nil {
		r.note(sbID, "no workspace diff: %v", err)
	} else {
		diff.Kind, diff.Name = "diff", "workspace.diff"
		arts = append(arts, diff)
	}
	// Without patterns, the artifacts are the files the task added or
	// changed.
	var keep []string
	if changes, err := r.read(ctx, sbID, stateDir+"/changes", 1<<20); err == nil {
		evs := parseNameStatus(string(changes.Content))
		r.s.emit(r.rec.ID, sbID, evs...)
		for _, e := range evs {
			if e.Kind != "deleted" {
				keep = append(keep, e.Path)
			}
		}
	}
	if len(r.req.Artifacts) > 0 {
		// Listed with find in the workspace, not from the snapshot: an
		// artifact may be a file .gitignore hides.
		res, err := r.s.m.Exec(ctx, r.c, sbID, sandbox.ExecRequest{Cwd: Workspace, TimeoutS: 120,
			Cmd: []string{"find", ".", "-path", "./.git", "-prune", "-o", "-type", "f", "-print0"}})
		switch {
		case err != nil:
			return err
		case res.Truncated:
			r.note(sbID, "the workspace lists more files than can be searched for artifacts; some may be missing")
		}
		keep = nil
		for _, f := range strings.Split(res.Stdout, "\x00") {
			if name := strings.TrimPrefix(f, "./"); name != "" && r.wanted(name) {
				keep = append(keep, name)
			}
		}
	}
	arts = append(arts, r.artifacts(ctx, sbID, keep)...)
	for i := range arts {
		arts[i].TaskID = r.rec.ID
	}
	return r.s.st.SaveTaskArtifacts(context.WithoutCancel(ctx), arts)
}

// note tells the task's followers about a problem of the run itself.
func (r *taskRun) note(sbID, format string, args ...any) {
	r.s.emit(r.rec.ID, sbID, Event{Type: EventRaw, Stream: "airlock", Line: fmt.Sprintf(format, args...)})
}

// artifacts reads the workspace files names, within the bounds.
func (r *taskRun) artifacts(ctx context.Context, sbID string, names []string) []taskrec.Artifact {
	var out []taskrec.Artifact
	var total int64
	skipped := 0
	for _, name := range names {
		if len(out) >= MaxArtifactFiles || total >= MaxArtifactTotal {
			skipped++
			continue
		}
		a, err := r.read(ctx, sbID, Workspace+"/"+name, min(MaxArtifactBytes, MaxArtifactTotal-total))
		if err != nil {
			r.note(sbID, "artifact %s not kept: %v", name, err)
			continue
		}
		a.Kind, a.Name = "file", name
		total += int64(len(a.Content))
		out = append(out, a)
	}
	if skipped > 0 {
		files := "files were"
		if skipped == 1 {
			files = "file was"
		}
		r.note(sbID, "%d matching %s not kept: at most %d files and %d bytes of artifacts", skipped, files, MaxArtifactFiles, MaxArtifactTotal)
	}
	return out
}

func (r *taskRun) wanted(name string) bool {
	for _, g := range r.req.Artifacts {
		if matchGlob(g, name) {
			return true
		}
	}
	return false
}

// read reads a sandbox file, keeping at most max bytes and reading no
// further (the harness may have made it a link to /dev/zero); Size is
// the file's size as it stats, SHA256 the hash of what is kept.
func (r *taskRun) read(ctx context.Context, sbID, p string, limit int64) (taskrec.Artifact, error) {
	fi, err := r.s.m.Stat(ctx, r.c, sbID, p)
	if err != nil {
		return taskrec.Artifact{}, fmt.Errorf("stat %s: %w", p, err)
	}
	if !fi.Mode.IsRegular() {
		return taskrec.Artifact{}, fmt.Errorf("%s is not a regular file", p)
	}
	w := &capWriter{max: limit}
	if _, err := r.s.m.ReadFile(ctx, r.c, sbID, p, w); err != nil && !w.full {
		return taskrec.Artifact{}, fmt.Errorf("read %s: %w", p, err)
	}
	sum := sha256.Sum256(w.buf)
	return taskrec.Artifact{Size: max(fi.Size, int64(len(w.buf))), SHA256: hex.EncodeToString(sum[:]),
		Truncated: w.full, Content: w.buf}, nil
}

// errFull stops a read that has all it may keep.
var errFull = errors.New("artifact bound reached")

// capWriter keeps the first max bytes written and fails the write that
// would pass them, which ends the read.
type capWriter struct {
	max  int64
	buf  []byte
	full bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	room := w.max - int64(len(w.buf))
	if int64(len(p)) <= room {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	w.buf = append(w.buf, p[:max(room, 0)]...)
	w.full = true
	return int(max(room, 0)), errFull
}

var _ io.Writer = (*capWriter)(nil)

// parseNameStatus turns `git diff --name-status -z` output into
// file_change events.
func parseNameStatus(s string) []Event {
	f := strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
	var evs []Event
	for i := 0; i+1 < len(f); i += 2 {
		kind := "modified"
		switch f[i] {
		case "A":
			kind = "added"
		case "D":
			kind = "deleted"
		}
		evs = append(evs, Event{Type: EventFileChange, Path: f[i+1], Kind: kind})
	}
	return evs
}

func fsMode(m uint32) fs.FileMode { return fs.FileMode(m) }
