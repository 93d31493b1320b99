package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

type runIn struct {
	SandboxID  string `json:"sandbox_id" jsonschema:"the sandbox's id"`
	Command    string `json:"command" jsonschema:"a bash command line, e.g. 'pip install -r requirements.txt && pytest -q'"`
	Cwd        string `json:"cwd,omitempty" jsonschema:"working directory (default /home/user)"`
	TimeoutS   int64  `json:"timeout_s,omitempty" jsonschema:"seconds before the command and its children are killed (default: until the sandbox expires)"`
	Background bool   `json:"background,omitempty" jsonschema:"start it and return its pid at once; read its output with process_output and stop it with process_kill"`
}

type runOut struct {
	Pid       int           `json:"pid,omitempty" jsonschema:"the background process's pid (background only)"`
	ExitCode  *int          `json:"exit_code,omitempty" jsonschema:"the command's exit status (absent for background)"`
	Signal    int           `json:"signal,omitempty" jsonschema:"the signal that killed it, if one did"`
	Stdout    string        `json:"stdout"`
	Stderr    string        `json:"stderr"`
	TimedOut  bool          `json:"timed_out" jsonschema:"true if timeout_s ran out and the command was killed"`
	Note      string        `json:"note,omitempty" jsonschema:"what was left out and how to read it"`
	Approvals []approvalOut `json:"approvals,omitempty" jsonschema:"approvals the sandbox asked for while the command ran (a held connection, say) and how each ended"`
}

type shellIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox's id"`
	SessionID string `json:"session_id,omitempty" jsonschema:"a session from an earlier shell call; omit to start a new one"`
	Command   string `json:"command" jsonschema:"a bash command line; cd, exports and shell variables carry over to the next call in the same session"`
	TimeoutS  int64  `json:"timeout_s,omitempty" jsonschema:"seconds before the command is interrupted (default 60)"`
}

type shellOut struct {
	SessionID string        `json:"session_id" jsonschema:"pass it to the next shell call to keep this shell's state"`
	ExitCode  int           `json:"exit_code"`
	Output    string        `json:"output" jsonschema:"stdout and stderr as the terminal showed them"`
	TimedOut  bool          `json:"timed_out"`
	Note      string        `json:"note,omitempty"`
	Approvals []approvalOut `json:"approvals,omitempty" jsonschema:"approvals the sandbox asked for while the command ran, and how each ended"`
}

type procIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox's id"`
	Pid       int    `json:"pid" jsonschema:"the pid run_command returned with background"`
	Offset    int64  `json:"offset,omitempty" jsonschema:"where to resume reading: next_offset of the previous call (default 0, the start)"`
}

type procOut struct {
	Output     string `json:"output" jsonschema:"stdout and stderr interleaved, from offset on"`
	NextOffset int64  `json:"next_offset" jsonschema:"pass as offset to read what comes after"`
	Running    bool   `json:"running"`
	ExitCode   *int   `json:"exit_code,omitempty" jsonschema:"set once the process has ended"`
	Dropped    int64  `json:"dropped,omitempty" jsonschema:"bytes no longer kept (only the last 4 MiB are)"`
	Note       string `json:"note,omitempty"`
}

type killIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox's id"`
	Pid       int    `json:"pid" jsonschema:"the background process's pid"`
	Signal    string `json:"signal,omitempty" jsonschema:"signal name or number (default KILL; TERM asks it to stop)"`
}

type killOut struct {
	Signalled bool `json:"signalled"`
}

func (b *bridge) addExecTools(s *mcpsdk.Server) {
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "run_command", Description: "Run a bash command in a sandbox and return its exit code, stdout and stderr. " +
		"Each call starts fresh in /home/user (use shell for state that carries over). With background: true it returns a pid at once: " +
		"read output with process_output, stop it with process_kill. Output over 64 KiB per stream is cut in the middle; redirect to a file and read_file it for everything."},
		b.runCommand)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "shell", Description: "Run a command in a persistent bash session of a sandbox: the working directory, exported variables and " +
		"shell functions persist between calls with the same session_id. Omit session_id to start a session; the result gives its id."}, b.shell)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "process_output", Description: "Read a background process's output from offset on without waiting, and whether it is still running. " +
		"Call again with next_offset for more.", Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true}}, b.processOutput)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "process_kill", Description: "Send a signal (default KILL) to a background process started by run_command."}, b.processKill)
}

// outputCap bounds each text a tool returns: a model's context is the
// scarce resource, and the rest stays readable (offsets, files).
const outputCap = 64 << 10

func (b *bridge) runCommand(ctx context.Context, req *mcpsdk.CallToolRequest, in runIn) (*mcpsdk.CallToolResult, runOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, runOut{}, err
	}
	if strings.TrimSpace(in.Command) == "" {
		return nil, runOut{}, errors.New("command is empty; give a bash command line")
	}
	er := client.ExecRequest{Command: in.Command, Cwd: in.Cwd, Timeout: time.Duration(in.TimeoutS) * time.Second}
	if in.Background {
		p, err := c.StartProcess(ctx, in.SandboxID, er, "mcp")
		if err != nil {
			return nil, runOut{}, toolError(ctx, c, in.SandboxID, err)
		}
		return nil, runOut{Pid: p.Pid, Note: fmt.Sprintf("started in the background; read its output with process_output {sandbox_id: %q, pid: %d}", in.SandboxID, p.Pid)}, nil
	}
	if req.Params.RequestState != "" || askModeOf(req) == askInput {
		return b.runRounds(ctx, req, c, in, er)
	}
	stdout, stderr := newCapture(outputCap), newCapture(outputCap)
	w1, w2 := outputWriters(ctx, req, stdout, stderr)
	s := startSentry(ctx, req, c, target{sandbox: in.SandboxID})
	// Streamed, not capped by the API at 1 MiB: the capture keeps the head
	// and tail, and cancelling ctx ends the request, which kills the
	// command's whole process tree on the server.
	res, err := c.ExecStream(ctx, in.SandboxID, er, writerFunc(w1), writerFunc(w2))
	approvals, notes := s.finish(ctx)
	if err != nil {
		return nil, runOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	out := runResult(stdout, stderr, res)
	out.Approvals = approvals
	out.Note = joinNotes(out.Note, notes)
	return nil, out, nil
}

// outputWriters are where a command's output goes: the captures, and
// progress notifications when the client asked for them.
func outputWriters(ctx context.Context, req *mcpsdk.CallToolRequest, stdout, stderr *capture) (w1, w2 func([]byte) (int, error)) {
	w1, w2 = stdout.write, stderr.write
	if tok := req.Params.GetProgressToken(); tok != nil {
		p := &progress{ctx: ctx, session: req.Session, token: tok, every: 250 * time.Millisecond}
		w1, w2 = p.wrap(stdout.write), p.wrap(stderr.write)
	}
	return w1, w2
}

// runResult is run_command's answer for a command that ended as res did.
func runResult(stdout, stderr *capture, res client.ExecResult) runOut {
	code := res.ExitCode
	out := runOut{ExitCode: &code, Signal: res.Signal, Stdout: stdout.String(), Stderr: stderr.String(), TimedOut: res.TimedOut}
	var notes []string
	for _, cp := range []struct {
		name string
		c    *capture
	}{{"stdout", stdout}, {"stderr", stderr}} {
		if cp.c.cut() {
			notes = append(notes, fmt.Sprintf("%s was %d bytes; only its first and last parts are shown", cp.name, cp.c.total))
		}
	}
	if len(notes) > 0 {
		out.Note = strings.Join(notes, "; ") + ". To read everything, rerun with the output redirected to a file (cmd > /tmp/out.log 2>&1) and use read_file, or run it with background: true and page through process_output."
	}
	if res.OOMKilled {
		out.Note = strings.TrimSpace(out.Note + " The command ran out of memory and was killed; create a sandbox with more memory_mb.")
	}
	return out
}

// joinNotes adds lines to a result's note.
func joinNotes(note string, lines []string) string {
	for _, l := range lines {
		if note != "" && !strings.HasSuffix(note, ".") {
			note += "."
		}
		note = strings.TrimSpace(note + " " + l)
	}
	return note
}

func (b *bridge) shell(ctx context.Context, req *mcpsdk.CallToolRequest, in shellIn) (*mcpsdk.CallToolResult, shellOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, shellOut{}, err
	}
	sid := in.SessionID
	if sid == "" {
		s, err := c.CreateSession(ctx, in.SandboxID, client.SessionRequest{})
		if err != nil {
			return nil, shellOut{}, toolError(ctx, c, in.SandboxID, err)
		}
		sid = s.ID
	}
	// A session's command reports its end to its own request only, so a
	// 2026-07-28 client, which can be asked only by ending the request,
	// is not asked here: the result names the approvals it waited on.
	s := startSentry(ctx, req, c, target{sandbox: in.SandboxID})
	res, err := c.SessionExec(ctx, in.SandboxID, sid, in.Command, time.Duration(in.TimeoutS)*time.Second)
	approvals, notes := s.finish(ctx)
	if err != nil {
		if errors.Is(err, client.ErrConflict) && ctx.Err() == nil {
			if msg, gone := sandboxGone(ctx, c, in.SandboxID); gone {
				return nil, shellOut{}, errors.New(msg)
			}
			return nil, shellOut{}, fmt.Errorf("session %s is busy with another command; wait for it, or omit session_id to start a new session", sid)
		}
		return nil, shellOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	out := shellOut{SessionID: sid, ExitCode: res.ExitCode, Output: res.Output, TimedOut: res.TimedOut}
	if len(out.Output) > outputCap || res.Truncated {
		out.Output = strings.ToValidUTF8(out.Output[:min(len(out.Output), outputCap)], "")
		out.Note = "output was cut; redirect it to a file (cmd > /tmp/out.log 2>&1) and use read_file to see all of it"
	}
	if res.TimedOut {
		out.Note = strings.TrimSpace(out.Note + " The command timed out and was interrupted; pass a larger timeout_s, or use run_command with background: true.")
	}
	out.Approvals = approvals
	out.Note = joinNotes(out.Note, notes)
	return nil, out, nil
}

func (b *bridge) processOutput(ctx context.Context, req *mcpsdk.CallToolRequest, in procIn) (*mcpsdk.CallToolResult, procOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, procOut{}, err
	}
	var buf strings.Builder
	var extra int64 // bytes read past the cap, to give back
	w := writerFunc(func(p []byte) (int, error) {
		n := len(p)
		room := outputCap - buf.Len()
		if room < len(p) {
			extra += int64(len(p) - max(room, 0))
			p = p[:max(room, 0)]
		}
		buf.Write(p)
		return n, nil
	})
	next, exit, dropped, err := c.ProcessOutput(ctx, in.SandboxID, in.Pid, in.Offset, false, w, w)
	if err != nil {
		return nil, procOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	out := procOut{Output: strings.ToValidUTF8(buf.String(), "\uFFFD"), NextOffset: next - extra, Running: exit == nil, Dropped: dropped}
	if exit != nil {
		code := exit.ExitCode
		out.ExitCode = &code
	}
	if extra > 0 {
		out.Note = fmt.Sprintf("%d more bytes are waiting; call process_output again with offset %d", extra, out.NextOffset)
	}
	return nil, out, nil
}

func (b *bridge) processKill(ctx context.Context, req *mcpsdk.CallToolRequest, in killIn) (*mcpsdk.CallToolResult, killOut, error) {
	c, err := b.apiClient(req.Extra)
	if err != nil {
		return nil, killOut{}, err
	}
	sig := in.Signal
	if sig == "" {
		sig = "KILL"
	}
	if err := c.SignalProcess(ctx, in.SandboxID, in.Pid, sig); err != nil {
		return nil, killOut{}, toolError(ctx, c, in.SandboxID, err)
	}
	return nil, killOut{Signalled: true}, nil
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
