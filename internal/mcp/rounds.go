package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

// A 2026-07-28 client is asked with an input_required result (SEP-2322):
// the call ends there, and the client retries it with the user's answers
// and the requestState it was given. Whatever the call waits on must
// outlive that first request, so such a call starts its work where a
// request's end does not stop it (run_command: a background process) and
// follows it again in the retry; requestState says what it started.

// maxAsked bounds the questions one round puts to the client's user: a
// sandbox that opens a hundred connections at once must not open a
// hundred forms. The rest are asked in the next round.
const maxAsked = 4

// callerOf is whose call req is: over HTTP the API key's digest (the
// verifier's UserID), over stdio "" (one user per process).
func callerOf(req *mcpsdk.CallToolRequest) string {
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		return req.Extra.TokenInfo.UserID
	}
	return ""
}

// resume returns the state of the call req: new for a first round, or
// the one its requestState carries, checked against tool, args (the
// arguments' digest) and the caller, with the answers the retry brings
// applied. notes say what could not be applied.
func (b *bridge) resume(ctx context.Context, req *mcpsdk.CallToolRequest, c *client.Client, tool, args string) (st callState, notes []string, err error) {
	tok := req.Params.RequestState
	if tok == "" {
		return callState{Tool: tool, Args: args, Caller: callerOf(req)}, nil, nil
	}
	st, err = b.state.open(tok, time.Now())
	if err == nil && (st.Tool != tool || st.Args != args || st.Caller != callerOf(req)) {
		err = errors.New("requestState was issued for another call")
	}
	if err != nil {
		return st, nil, fmt.Errorf("%v; call %s again without it", err, tool)
	}
	for _, id := range st.Asking {
		res, _ := req.Params.InputResponses[id].(*mcpsdk.ElicitResult)
		if msg := answer(ctx, c, id, res); msg != "" {
			notes = append(notes, msg)
		}
	}
	st.Asking = nil
	return st, notes, nil
}

// watchFor is the watch of t for a call in state st: carried over from an
// earlier round, or begun now (noting what is already pending).
func watchFor(ctx context.Context, c *client.Client, t target, st *callState, notes *[]string) *watch {
	if st.Watching {
		return resumeWatch(c, t, st.Skip, st.Seen)
	}
	w, err := newWatch(ctx, c, t)
	if err != nil {
		*notes = append(*notes, "approvals could not be watched: "+err.Error())
	}
	st.Watching = true
	st.Skip = slices.Sorted(maps.Keys(w.skip))
	return w
}

// waitOrAsk runs follow until it returns, looking for approvals of w
// meanwhile. When some open it stops follow and returns them; otherwise
// it returns follow's error.
func waitOrAsk(ctx context.Context, w *watch, follow func(context.Context) error) ([]client.Approval, error) {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- follow(fctx) }()
	tick := time.NewTicker(approvalPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-errc:
			return nil, err
		case <-tick.C:
		}
		opened, _, err := w.poll(ctx, maxAsked)
		if err != nil || len(opened) == 0 {
			continue // a failed look is retried at the next tick
		}
		cancel()
		if err := <-errc; err == nil {
			// It ended as they opened: its result stands, and the
			// approvals are reported with it.
			return nil, nil
		}
		return opened, nil
	}
}

// askRound ends a round with the questions about opened, and the state
// the retry must bring back.
func (b *bridge) askRound(st callState, w *watch, opened []client.Approval) (*mcpsdk.CallToolResult, error) {
	st.Seen = slices.Clone(w.seen)
	st.Asking = nil
	reqs := mcpsdk.InputRequestMap{}
	for _, a := range opened {
		reqs[a.ID] = askParams(a)
		st.Asking = append(st.Asking, a.ID)
	}
	st.Expires = time.Now().Add(stateLife).Unix()
	tok, err := b.state.seal(st)
	if err != nil {
		return nil, fmt.Errorf("sealing requestState: %w", err)
	}
	return &mcpsdk.CallToolResult{InputRequests: reqs, RequestState: tok}, nil
}

// runRounds is run_command for a client asked with input_required: the
// command runs as a background process, which a round's end leaves
// running, and each round follows its output from the start (what the
// server keeps of it: its last 4 MiB).
func (b *bridge) runRounds(ctx context.Context, req *mcpsdk.CallToolRequest, c *client.Client, in runIn, er client.ExecRequest) (*mcpsdk.CallToolResult, runOut, error) {
	st, notes, err := b.resume(ctx, req, c, "run_command", digest(in))
	if err != nil {
		return nil, runOut{}, err
	}
	w := watchFor(ctx, c, target{sandbox: in.SandboxID}, &st, &notes)
	if st.Pid == 0 {
		p, err := c.StartProcess(ctx, in.SandboxID, er, "mcp")
		if err != nil {
			return nil, runOut{}, toolError(ctx, c, in.SandboxID, err)
		}
		st.Pid = p.Pid
	}
	stdout, stderr := newCapture(outputCap), newCapture(outputCap)
	w1, w2 := outputWriters(ctx, req, stdout, stderr)
	var exit *client.ExecResult
	var dropped int64
	opened, err := waitOrAsk(ctx, w, func(fctx context.Context) error {
		var err error
		_, exit, dropped, err = c.ProcessOutput(fctx, in.SandboxID, st.Pid, 0, true, writerFunc(w1), writerFunc(w2))
		return err
	})
	if len(opened) > 0 {
		res, err := b.askRound(st, w, opened)
		return res, runOut{}, err
	}
	if ctx.Err() != nil {
		// The call was cancelled: the command must not run on unwatched,
		// as a cancelled exec does not. Its tree goes with it.
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		c.SignalProcess(kctx, in.SandboxID, st.Pid, "KILL")
		cancel()
		return nil, runOut{}, fmt.Errorf("cancelled: the command (process %d) was killed", st.Pid)
	}
	if err == nil && exit == nil {
		err = fmt.Errorf("the output of process %d ended before the process did", st.Pid)
	}
	if err != nil {
		return nil, runOut{}, fmt.Errorf("%w; the command may still run as process %d: read it with process_output, stop it with process_kill",
			toolError(ctx, c, in.SandboxID, err), st.Pid)
	}
	out := runResult(stdout, stderr, *exit)
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("the first %d bytes of output were no longer kept when it was read again after the approval", dropped))
	}
	approvals, more := w.ended(ctx)
	out.Approvals = approvals
	out.Note = joinNotes(out.Note, append(notes, more...))
	return nil, out, nil
}
