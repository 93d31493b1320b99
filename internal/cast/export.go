package cast

import (
	"fmt"

	"github.com/airlockhq/airlock/internal/audit"
)

// Session is the recording of one terminal session: what it printed and
// what was typed, its resizes, and a marker at each command: one the API
// ran in it, or a line typed in an interactive session (at the Enter
// that ended it; empty lines are not marked). Times count from the
// session's first event. ErrNotFound: the log has no event of it.
func Session(events []audit.Event, sessionID string) (*Cast, error) {
	recs, err := decode(events)
	if err != nil {
		return nil, err
	}
	b := newBuilder()
	b.c.Header.Title = "session " + sessionID
	out, in := streamKey(Output, "session", sessionID), streamKey(Input, "session", sessionID)
	var ed lineEditor
	found, ended, interactive := false, false, true
	for _, r := range recs {
		if r.Type == audit.OutputCapped && found && !ended {
			b.add(r.Time, Marker, r.cappedLabel())
		}
		if sessionID == "" || r.SessionID != sessionID {
			continue
		}
		found = true
		switch r.Type {
		case audit.SessionCreated:
			b.at(r.Time)
			if r.Cols > 0 && r.Rows > 0 {
				b.c.Header.Width, b.c.Header.Height = r.Cols, r.Rows
			}
			if r.Shell != "" {
				b.c.Header.Command = r.Shell
				b.c.Header.Env = map[string]string{"SHELL": r.Shell}
			}
			interactive = r.Mode != "exec"
		case audit.SessionOutput:
			if _, err := b.text(r, out, false); err != nil {
				return nil, err
			}
		case audit.SessionInput:
			t, err := b.text(r, in, false)
			if err != nil {
				return nil, err
			}
			for _, l := range ed.feed(t) {
				if interactive {
					b.add(r.Time, Marker, l)
				}
			}
		case audit.SessionResized:
			if r.Cols > 0 && r.Rows > 0 {
				b.add(r.Time, Resize, resizeData(r.Cols, r.Rows))
			}
		case audit.ExecStarted:
			b.add(r.Time, Marker, label(r.command()))
		case audit.SessionEnded:
			b.end(r.Time, out)
			b.end(r.Time, in)
			b.add(r.Time, Marker, "session ended, "+r.status())
			ended = true
		}
	}
	if !found {
		return nil, fmt.Errorf("session %q: %w", sessionID, ErrNotFound)
	}
	return b.finish(), nil
}

// Exec is the recording of one command: a marker with the command, its
// stdout and stderr in the order they came, and a marker with its exit
// status. Output that came through pipes gets "\r\n" line ends, as a
// terminal would have shown it; a command run in a session shows what
// the session's terminal printed while it ran. ErrNotFound: the log has
// no event of it.
func Exec(events []audit.Event, execID string) (*Cast, error) {
	recs, err := decode(events)
	if err != nil {
		return nil, err
	}
	b := newBuilder()
	found, running := false, false
	session := "" // the session the command ran in
	sessionOut := func() string { return streamKey(Output, "session", session) }
	for _, r := range recs {
		mine := execID != "" && r.ExecID == execID
		found = found || mine
		switch {
		case r.Type == audit.OutputCapped && running:
			b.add(r.Time, Marker, r.cappedLabel())
		case r.Type == audit.SessionOutput && running && session != "" && r.SessionID == session:
			if _, err := b.text(r, sessionOut(), false); err != nil {
				return nil, err
			}
		case !mine:
		case r.Type == audit.ExecStarted:
			cmd := r.command()
			b.c.Header.Title, b.c.Header.Command = label(cmd), cmd
			b.add(r.Time, Marker, label(cmd))
			running, session = true, r.SessionID
		case r.Type == audit.ExecOutput:
			if _, err := b.text(r, execStream(r), session == ""); err != nil {
				return nil, err
			}
		case r.Type == audit.ExecExited:
			b.end(r.Time, streamKey(Output, "exec", execID, "stdout"))
			b.end(r.Time, streamKey(Output, "exec", execID, "stderr"))
			b.end(r.Time, sessionOut())
			b.add(r.Time, Marker, r.status())
			running = false
		}
	}
	if !found {
		return nil, fmt.Errorf("exec %q: %w", execID, ErrNotFound)
	}
	return b.finish(), nil
}

// execStream is the stream key of an exec.output piece.
func execStream(r record) string {
	s := r.Stream
	if s != "stderr" {
		s = "stdout"
	}
	return streamKey(Output, "exec", r.ExecID, s)
}

// Sandbox is the recording of a whole sandbox: the output of every
// command and session interleaved as it happened (a command run in a
// session shows through the session's terminal only), what was typed in
// sessions, and markers where commands, sessions and typed lines start
// and end. It is as large as the largest terminal (at least 80x24) and
// has no resizes: its sessions' sizes differ. Times count from the first
// event it uses; a log without any is an empty cast.
func Sandbox(events []audit.Event) (*Cast, error) {
	recs, err := decode(events)
	if err != nil {
		return nil, err
	}
	b := newBuilder()
	if len(events) > 0 {
		b.c.Header.Title = "sandbox " + events[0].Sandbox
	}
	inSession := map[string]bool{}  // exec ids run in a session
	commands := map[string]string{} // exec id -> label
	exec := map[string]bool{}       // session id -> exec mode
	eds := map[string]*lineEditor{} // session id -> what is typed
	for _, r := range recs {
		switch r.Type {
		case audit.ExecStarted:
			commands[r.ExecID] = label(r.command())
			inSession[r.ExecID] = r.SessionID != ""
			b.add(r.Time, Marker, commands[r.ExecID])
		case audit.ExecOutput:
			if inSession[r.ExecID] {
				continue
			}
			if _, err := b.text(r, execStream(r), true); err != nil {
				return nil, err
			}
		case audit.ExecExited:
			if inSession[r.ExecID] {
				continue
			}
			b.end(r.Time, streamKey(Output, "exec", r.ExecID, "stdout"))
			b.end(r.Time, streamKey(Output, "exec", r.ExecID, "stderr"))
			b.add(r.Time, Marker, commands[r.ExecID]+": "+r.status())
		case audit.SessionCreated, audit.SessionResized:
			b.c.Header.Width = max(b.c.Header.Width, r.Cols)
			b.c.Header.Height = max(b.c.Header.Height, r.Rows)
			if r.Type == audit.SessionCreated {
				exec[r.SessionID] = r.Mode == "exec"
				b.add(r.Time, Marker, "session "+r.SessionID+" started")
			}
		case audit.SessionOutput:
			if _, err := b.text(r, streamKey(Output, "session", r.SessionID), false); err != nil {
				return nil, err
			}
		case audit.SessionInput:
			t, err := b.text(r, streamKey(Input, "session", r.SessionID), false)
			if err != nil {
				return nil, err
			}
			ed := eds[r.SessionID]
			if ed == nil {
				ed = &lineEditor{}
				eds[r.SessionID] = ed
			}
			for _, l := range ed.feed(t) {
				if !exec[r.SessionID] {
					b.add(r.Time, Marker, l)
				}
			}
		case audit.SessionEnded:
			b.end(r.Time, streamKey(Output, "session", r.SessionID))
			b.end(r.Time, streamKey(Input, "session", r.SessionID))
			b.add(r.Time, Marker, "session "+r.SessionID+" ended, "+r.status())
		case audit.OutputCapped:
			b.add(r.Time, Marker, r.cappedLabel())
		}
	}
	return b.finish(), nil
}
