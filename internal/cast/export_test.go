package cast

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/audit"
)

func TestSession(t *testing.T) {
	created := func(mode string) map[string]any {
		return kv("session_id", "ses_1", "mode", mode, "shell", "/bin/bash", "cols", 100, "rows", 30)
	}
	ses := func(p string) map[string]any { return piece(p, "session_id", "ses_1") }
	hdr := Header{Version: 2, Width: 100, Height: 30, Timestamp: t0.Unix(), Title: "session ses_1",
		Command: "/bin/bash", Env: map[string]string{"SHELL": "/bin/bash"}}
	withDuration := func(h Header, s float64) Header { h.Duration = s; return h }
	for _, tc := range []struct {
		name       string
		log        func(l *logOf)
		wantHeader Header
		want       []Event
	}{{
		name: "interactive: output, input, a typed line, resize, end",
		log: func(l *logOf) {
			l.add(0, audit.SessionCreated, created("interactive")).
				add(100, audit.SessionOutput, ses("$ ")).
				add(1000, audit.SessionInput, ses("l")).
				add(1200, audit.SessionInput, ses("s -a\x7fl\r")).
				add(1300, audit.SessionOutput, ses("ls -l\r\nfile\r\n$ ")).
				add(2000, audit.SessionResized, kv("session_id", "ses_1", "cols", 120, "rows", 40)).
				add(2500, audit.SessionInput, ses("\r")).              // an empty line is no command
				add(2600, audit.SessionInput, ses("\x1b[Aecho hi\r")). // an arrow key is no text
				add(3000, audit.SessionEnded, kv("session_id", "ses_1", "exit_code", 0))
		},
		wantHeader: withDuration(hdr, 3),
		want: []Event{
			ev(100, "o", "$ "),
			ev(1000, "i", "l"),
			ev(1200, "i", "s -a\x7fl\r"),
			ev(1200, "m", "ls -l"),
			ev(1300, "o", "ls -l\r\nfile\r\n$ "),
			ev(2000, "r", "120x40"),
			ev(2500, "i", "\r"),
			ev(2600, "i", "\x1b[Aecho hi\r"),
			ev(2600, "m", "echo hi"),
			ev(3000, "m", "session ended, exit 0"),
		},
	}, {
		name: "exec mode: a marker per command, none for input",
		log: func(l *logOf) {
			l.add(0, audit.SessionCreated, created("exec")).
				add(10, audit.ExecStarted, kv("exec_id", "ex_1", "session_id", "ses_1", "argv", []string{"echo", "a b", "it's"})).
				add(20, audit.SessionOutput, ses("a b it's\r\n")).
				add(30, audit.ExecExited, kv("exec_id", "ex_1", "session_id", "ses_1", "exit_code", 0)).
				add(40, audit.ExecStarted, kv("exec_id", "ex_2", "session_id", "ses_1", "command", "cd /tmp &&\n  pwd")).
				add(50, audit.SessionInput, ses("y\r")).
				add(60, audit.SessionEnded, kv("session_id", "ses_1", "signal", 9, "exit_code", -1))
		},
		wantHeader: withDuration(hdr, 0.06),
		want: []Event{
			ev(10, "m", `echo 'a b' 'it'\''s'`),
			ev(20, "o", "a b it's\r\n"),
			ev(40, "m", "cd /tmp && pwd"),
			ev(50, "i", "y\r"),
			ev(60, "m", "session ended, killed by signal 9"),
		},
	}, {
		name: "times count from the session's first event; other sessions, execs and unknown types are left out",
		log: func(l *logOf) {
			l.add(0, audit.SandboxCreated, kv("template", "base")).
				add(500, audit.ExecStarted, kv("exec_id", "ex_1", "command", "true")).
				add(600, audit.ExecOutput, piece("not this", "exec_id", "ex_1", "stream", "stdout")).
				add(5000, audit.SessionCreated, created("interactive")).
				add(5001, audit.SessionCreated, kv("session_id", "ses_2", "mode", "interactive", "cols", 10, "rows", 10)).
				add(5002, audit.SessionOutput, piece("other", "session_id", "ses_2")).
				add(5100, "future.event", kv("session_id", "ses_1", "data", "?")).
				add(5200, audit.FileWritten, kv("path", "/x")).
				add(5250, audit.SessionOutput, ses("mine"))
		},
		wantHeader: Header{Version: 2, Width: 100, Height: 30, Timestamp: t0.Unix() + 5, Duration: 0.25,
			Title: "session ses_1", Command: "/bin/bash", Env: map[string]string{"SHELL": "/bin/bash"}},
		want: []Event{ev(250, "o", "mine")},
	}, {
		name: "a shell that was lost",
		log: func(l *logOf) {
			l.add(0, audit.SessionCreated, created("interactive")).
				add(10, audit.SessionEnded, kv("session_id", "ses_1", "error", "unavailable: session ses_1: shell lost: EOF"))
		},
		wantHeader: withDuration(hdr, 0.01),
		want:       []Event{ev(10, "m", "session ended, unavailable: session ses_1: shell lost: EOF")},
	}, {
		name: "no session.created: 80x24; the output cap is marked",
		log: func(l *logOf) {
			l.add(0, audit.SessionOutput, ses("a")).
				add(10, audit.OutputCapped, kv("limit_bytes", 1024)).
				add(20, audit.SessionInput, ses("b\r"))
		},
		wantHeader: Header{Version: 2, Width: 80, Height: 24, Timestamp: t0.Unix(), Duration: 0.02, Title: "session ses_1"},
		want: []Event{
			ev(0, "o", "a"),
			ev(10, "m", "output not recorded from here on (audit output cap of 1024 bytes reached)"),
			ev(20, "i", "b\r"),
			ev(20, "m", "b"),
		},
	}, {
		name: "output stopped by the tenant's storage quota is marked so",
		log: func(l *logOf) {
			l.add(0, audit.SessionOutput, ses("a")).
				add(10, audit.OutputCapped, kv("reason", "storage_quota", "limit_bytes", 1048576, "used_bytes", 1048600))
		},
		wantHeader: Header{Version: 2, Width: 80, Height: 24, Timestamp: t0.Unix(), Duration: 0.01, Title: "session ses_1"},
		want: []Event{
			ev(0, "o", "a"),
			ev(10, "m", "output not recorded from here on (the tenant's storage quota of 1048576 bytes reached)"),
		},
	}, {
		name: "a recorder clock that steps back does not make time go back",
		log: func(l *logOf) {
			l.add(1000, audit.SessionOutput, ses("a")).
				add(900, audit.SessionOutput, ses("b")).
				add(1100, audit.SessionOutput, ses("c"))
		},
		wantHeader: Header{Version: 2, Width: 80, Height: 24, Timestamp: t0.Unix() + 1, Duration: 0.1, Title: "session ses_1"},
		want:       []Event{ev(0, "o", "a"), ev(0, "o", "b"), ev(100, "o", "c")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := &logOf{t: t}
			tc.log(l)
			c, err := Session(l.events, "ses_1")
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.wantHeader, c.Header); d != "" {
				t.Errorf("header (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.want, c.Events); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
}

func TestExec(t *testing.T) {
	out := func(stream, p string) map[string]any { return piece(p, "exec_id", "ex_1", "stream", stream) }
	for _, tc := range []struct {
		name       string
		log        func(l *logOf)
		wantHeader Header
		want       []Event
	}{{
		name: "argv, stdout and stderr in order, exit status",
		log: func(l *logOf) {
			l.add(0, audit.ExecStarted, kv("exec_id", "ex_1", "argv", []string{"sh", "-c", "echo a; echo b >&2"}, "pid", 7)).
				add(5, audit.ExecStarted, kv("exec_id", "ex_2", "command", "other")).
				add(10, audit.ExecOutput, out("stdout", "a\n")).
				add(11, audit.ExecOutput, piece("other\n", "exec_id", "ex_2", "stream", "stdout")).
				add(12, audit.ExecOutput, out("stderr", "b\r\n")).
				add(13, audit.ExecOutput, out("stdout", "c\r")).
				add(14, audit.ExecOutput, out("stdout", "\nd\n\ne")).
				add(20, audit.ExecExited, kv("exec_id", "ex_1", "exit_code", 3, "duration_ms", 20))
		},
		wantHeader: Header{Version: 2, Width: 80, Height: 24, Timestamp: t0.Unix(), Duration: 0.02,
			Title: `sh -c 'echo a; echo b >&2'`, Command: `sh -c 'echo a; echo b >&2'`},
		want: []Event{
			ev(0, "m", `sh -c 'echo a; echo b >&2'`),
			ev(10, "o", "a\r\n"),
			ev(12, "o", "b\r\n"),
			ev(13, "o", "c\r"),
			ev(14, "o", "\nd\r\n\r\ne"),
			ev(20, "m", "exit 3"),
		},
	}, {
		name: "a shell string, killed on timeout; the output cap is marked while it runs",
		log: func(l *logOf) {
			l.add(0, audit.ExecStarted, kv("exec_id", "ex_1", "command", "sleep 100")).
				add(5, audit.OutputCapped, kv("limit_bytes", 10)).
				add(1000, audit.ExecExited, kv("exec_id", "ex_1", "exit_code", -1, "signal", 9, "timed_out", true, "oom_killed", true))
		},
		wantHeader: Header{Version: 2, Width: 80, Height: 24, Timestamp: t0.Unix(), Duration: 1, Title: "sleep 100", Command: "sleep 100"},
		want: []Event{
			ev(0, "m", "sleep 100"),
			ev(5, "m", "output not recorded from here on (audit output cap of 10 bytes reached)"),
			ev(1000, "m", "killed by signal 9, timed out, out of memory"),
		},
	}, {
		name: "a command in a session: what the session's terminal printed while it ran, kept as it is",
		log: func(l *logOf) {
			ses := func(p string) map[string]any { return piece(p, "session_id", "ses_1") }
			l.add(0, audit.SessionOutput, ses("before")).
				add(10, audit.ExecStarted, kv("exec_id", "ex_1", "session_id", "ses_1", "command", "ls")).
				add(11, audit.SessionInput, ses("ls\n")).
				add(12, audit.SessionOutput, ses("$ ls\r\n\xe2\x82")).
				add(13, audit.SessionOutput, piece("other", "session_id", "ses_2")).
				add(14, audit.ExecOutput, out("stdout", "a\nb\r\n")).
				add(15, audit.SessionOutput, ses("\xac\r\n")).
				add(20, audit.ExecExited, kv("exec_id", "ex_1", "session_id", "ses_1", "exit_code", 0)).
				add(30, audit.SessionOutput, ses("after"))
		},
		wantHeader: Header{Version: 2, Width: 80, Height: 24, Timestamp: t0.Unix(), Duration: 0.01, Title: "ls", Command: "ls"},
		want: []Event{
			ev(0, "m", "ls"),
			ev(2, "o", "$ ls\r\n"),
			ev(4, "o", "a\nb\r\n"),
			ev(5, "o", "€\r\n"),
			ev(10, "m", "exit 0"),
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := &logOf{t: t}
			tc.log(l)
			c, err := Exec(l.events, "ex_1")
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.wantHeader, c.Header); d != "" {
				t.Errorf("header (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.want, c.Events); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
}

func TestSandbox(t *testing.T) {
	l := &logOf{t: t}
	l.add(0, audit.SandboxCreated, kv("template", "base")).
		add(100, audit.ExecStarted, kv("exec_id", "ex_1", "argv", []string{"python3", "-c", "print(1)"})).
		add(150, audit.SessionCreated, kv("session_id", "ses_1", "mode", "interactive", "cols", 120, "rows", 20)).
		add(160, audit.SessionOutput, piece("$ ", "session_id", "ses_1")).
		add(200, audit.ExecOutput, piece("1\n", "exec_id", "ex_1", "stream", "stdout")).
		add(210, audit.ExecExited, kv("exec_id", "ex_1", "exit_code", 0)).
		add(300, audit.SessionInput, piece("id\r", "session_id", "ses_1")).
		add(310, audit.SessionOutput, piece("id\r\nuid=1000\r\n$ ", "session_id", "ses_1")).
		add(400, audit.SessionCreated, kv("session_id", "ses_2", "mode", "exec", "cols", 80, "rows", 50)).
		add(410, audit.ExecStarted, kv("exec_id", "ex_2", "session_id", "ses_2", "command", "pwd")).
		add(420, audit.SessionOutput, piece("/home/user\r\n", "session_id", "ses_2")).
		add(421, audit.ExecOutput, piece("/home/user\n", "exec_id", "ex_2", "stream", "stdout")).
		add(430, audit.ExecExited, kv("exec_id", "ex_2", "session_id", "ses_2", "exit_code", 0)).
		add(500, audit.SessionEnded, kv("session_id", "ses_1", "exit_code", 0)).
		add(600, audit.SandboxDestroyed, kv("reason", "deleted"))
	c, err := Sandbox(l.events)
	if err != nil {
		t.Fatal(err)
	}
	wantHeader := Header{Version: 2, Width: 120, Height: 50, Timestamp: t0.Unix(), Duration: 0.4, Title: "sandbox sb_1"}
	if d := cmp.Diff(wantHeader, c.Header); d != "" {
		t.Errorf("header (-want +got):\n%s", d)
	}
	want := []Event{
		ev(0, "m", "python3 -c 'print(1)'"),
		ev(50, "m", "session ses_1 started"),
		ev(60, "o", "$ "),
		ev(100, "o", "1\r\n"),
		ev(110, "m", "python3 -c 'print(1)': exit 0"),
		ev(200, "i", "id\r"),
		ev(200, "m", "id"),
		ev(210, "o", "id\r\nuid=1000\r\n$ "),
		ev(300, "m", "session ses_2 started"),
		ev(310, "m", "pwd"),
		ev(320, "o", "/home/user\r\n"), // once: through ses_2's terminal
		ev(400, "m", "session ses_1 ended, exit 0"),
	}
	if d := cmp.Diff(want, c.Events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}

	empty, err := Sandbox(nil)
	if err != nil || len(empty.Events) != 0 || empty.Header.Width != 80 {
		t.Errorf("Sandbox(no events) = %+v, %v; want an empty 80x24 cast", empty, err)
	}
}

func TestNotFound(t *testing.T) {
	l := &logOf{t: t}
	l.add(0, audit.ExecStarted, kv("exec_id", "ex_1", "command", "true")).
		add(1, audit.SessionCreated, kv("session_id", "ses_1", "cols", 80, "rows", 24)).
		add(2, audit.OutputCapped, kv("limit_bytes", 1))
	for name, f := range map[string]func() (*Cast, error){
		"session":       func() (*Cast, error) { return Session(l.events, "ses_2") },
		"empty session": func() (*Cast, error) { return Session(l.events, "") },
		"exec":          func() (*Cast, error) { return Exec(l.events, "ex_2") },
		"empty exec":    func() (*Cast, error) { return Exec(l.events, "") },
		"exec in none":  func() (*Cast, error) { return Exec(nil, "ex_1") },
	} {
		if c, err := f(); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %+v, %v; want ErrNotFound", name, c, err)
		}
	}
}

func TestBadLog(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		data       map[string]any
	}{
		{"bad base64", "illegal base64", kv("session_id", "ses_1", "data", "!!", "encoding", "base64")},
		{"unknown encoding", `unknown encoding "rot13"`, kv("session_id", "ses_1", "data", "nb", "encoding", "rot13")},
		{"wrong type", "audit event 1 (session.output)", kv("session_id", 5)},
	} {
		l := &logOf{t: t}
		l.add(0, audit.SessionOutput, tc.data)
		if _, err := Session(l.events, "ses_1"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.want)
		}
	}
}

// splitTexts are outputs with characters of every UTF-8 length.
var splitTexts = []string{
	"é",
	"€",
	"😀",
	"héllo wörld: €5 😀 ✓\r\n",
	"日本語のテキスト\r\n",
}

// TestSplitUTF8 cuts each text into two pieces at every byte, and into
// one-byte pieces, and checks that the output reads back whole.
func TestSplitUTF8(t *testing.T) {
	for _, text := range splitTexts {
		var cuts [][]string
		for i := 0; i <= len(text); i++ {
			cuts = append(cuts, []string{text[:i], text[i:]})
		}
		var bytewise []string
		for i := range len(text) {
			bytewise = append(bytewise, text[i:i+1])
		}
		cuts = append(cuts, bytewise)
		for _, pieces := range cuts {
			l := &logOf{t: t}
			l.add(0, audit.ExecStarted, kv("exec_id", "ex_1", "command", "x"))
			for i, p := range pieces {
				if p != "" {
					l.add(float64(i), audit.SessionOutput, piece(p, "session_id", "ses_1"))
					l.add(float64(i), audit.ExecOutput, piece(p, "exec_id", "ex_1", "stream", "stdout"))
				}
			}
			s, err := Session(l.events, "ses_1")
			if err != nil {
				t.Fatal(err)
			}
			e, err := Exec(l.events, "ex_1")
			if err != nil {
				t.Fatal(err)
			}
			for name, c := range map[string]*Cast{"session": s, "exec": e} {
				if got := c.Text(Output); got != text {
					t.Errorf("%s of pieces %q: output %q, want %q", name, pieces, got, text)
				}
				for _, ev := range c.Events {
					if !utf8.ValidString(ev.Data) {
						t.Errorf("%s of pieces %q: event %q is not UTF-8", name, pieces, ev.Data)
					}
				}
			}
		}
	}
}

// TestSplitUTF8Streams checks that stdout and stderr carry their own
// tails: a character cut in stdout is not completed by stderr's bytes.
func TestSplitUTF8Streams(t *testing.T) {
	l := &logOf{t: t}
	euro := "€" // e2 82 ac
	l.add(0, audit.ExecOutput, piece(euro[:1], "exec_id", "ex_1", "stream", "stdout")).
		add(1, audit.ExecOutput, piece("é"[:1], "exec_id", "ex_1", "stream", "stderr")).
		add(2, audit.ExecOutput, piece(euro[1:], "exec_id", "ex_1", "stream", "stdout")).
		add(3, audit.ExecOutput, piece("é"[1:], "exec_id", "ex_1", "stream", "stderr"))
	c, err := Exec(l.events, "ex_1")
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{ev(2, "o", "€"), ev(3, "o", "é")}
	if d := cmp.Diff(want, c.Events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

// TestInvalidUTF8 checks what becomes of bytes that are not UTF-8: each
// maximal invalid part is one U+FFFD, whether it is in the middle of a
// piece, or the end of a stream that stopped inside a character.
func TestInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pieces []string
		end    bool // the session ends after the pieces
		want   string
	}{
		{"invalid byte", []string{"a\xffb"}, false, "a\ufffdb"},
		{"cut character then ASCII", []string{"a\xe2\x82", "b"}, false, "a\ufffdb"},
		{"lone continuation bytes", []string{"\x80\x80"}, false, "\ufffd\ufffd"},
		{"surrogate", []string{"\xed\xa0\x80"}, false, "\ufffd\ufffd\ufffd"},
		{"stream ends inside a character", []string{"ab\xf0\x9f\x98"}, true, "ab\ufffd"},
		{"log ends inside a character", []string{"ab", "\xe2"}, false, "ab\ufffd"},
		{"binary", []string{"\x00\x01\xfe"}, false, "\x00\x01\ufffd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &logOf{t: t}
			for i, p := range tc.pieces {
				l.add(float64(i), audit.SessionOutput, piece(p, "session_id", "ses_1"))
			}
			if tc.end {
				l.add(10, audit.SessionEnded, kv("session_id", "ses_1"))
			}
			c, err := Session(l.events, "ses_1")
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Text(Output); got != tc.want {
				t.Errorf("output %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLineEditor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pieces []string
		want   []string
	}{
		{"one line", []string{"ls -la\r"}, []string{"ls -la"}},
		{"typed a key at a time", []string{"l", "s", "\r"}, []string{"ls"}},
		{"two lines in one paste", []string{"echo a\recho b\r"}, []string{"echo a", "echo b"}},
		{"backspace", []string{"lx\x7fs\r"}, []string{"ls"}},
		{"ctrl-u and ctrl-c drop the line", []string{"rm -rf /\x15ls\r", "oops\x03pwd\r"}, []string{"ls", "pwd"}},
		{"escape sequence cut across pieces", []string{"a\x1b", "[", "1;5", "Db\r"}, []string{"ab"}},
		{"newline, and CR LF once", []string{"a\nb\r\nc\r"}, []string{"a", "b", "c"}},
		{"empty and blank lines", []string{"\r  \r\t\r"}, nil},
		{"whitespace trimmed", []string{"  echo   a \r"}, []string{"echo a"}},
		{"bounded", []string{strings.Repeat("x", 5000) + "\r"}, []string{strings.Repeat("x", maxLabel-1) + "…"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ed lineEditor
			var got []string
			for _, p := range tc.pieces {
				got = append(got, ed.feed(p)...)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("lines (-want +got):\n%s", d)
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"ls", "-la", "/tmp/a_b.c"}, "ls -la /tmp/a_b.c"},
		{[]string{"echo", ""}, "echo ''"},
		{[]string{"sh", "-c", "echo $HOME; x=1"}, "sh -c 'echo $HOME; x=1'"},
		{[]string{"printf", "it's"}, `printf 'it'\''s'`},
		{[]string{"echo", "é"}, "echo 'é'"},
	} {
		if got := shellQuote(tc.argv); got != tc.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tc.argv, got, tc.want)
		}
	}
}

// FuzzTextStream checks that cutting a stream anywhere changes nothing:
// the pieces' text is the whole's, with U+FFFD for what is not UTF-8.
func FuzzTextStream(f *testing.F) {
	f.Add([]byte("héllo €😀"), uint8(2), uint8(5))
	f.Add([]byte("a\xe2\x82b\xf0\x9f"), uint8(2), uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, i, j uint8) {
		x, y := min(int(i), len(b)), min(int(j), len(b))
		if x > y {
			x, y = y, x
		}
		var s textStream
		got := s.next(b[:x]) + s.next(b[x:y]) + s.next(b[y:]) + s.flush()
		if want := validUTF8(b); got != want {
			t.Errorf("cut at %d, %d: %q, want %q", x, y, got, want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("%q is not UTF-8", got)
		}
	})
}
