package askchan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Codex asks through a PreToolUse hook: before each tool call it runs
// the hook's command with the call as JSON on stdin. A hook that prints
// nothing and exits 0 lets the call run; one that prints a deny decision
// blocks it, and Codex hands the model the reason as the call's result.
//
// Codex 0.169 lets the call run when its hook fails in any other way
// (exits 1, exits 2 saying nothing, times out, is missing). So the hook
// never fails that way on purpose: whatever goes wrong is printed as a
// denial, and it gives up on its own (a denial) before Codex would stop
// waiting for it.

// maxHookInput bounds the hook's input: a call's input holds whole files
// (apply_patch).
const maxHookInput = 64 << 20

// hookCall is the part of Codex's PreToolUse input that is asked about.
type hookCall struct {
	Event     string          `json:"hook_event_name"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// hookMain runs airlock-approve --hook with the arguments after --hook:
// "codex", then optionally --wait SECONDS.
func hookMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "codex" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var wait time.Duration
	switch {
	case len(args) == 3 && args[1] == "--wait":
		s, err := strconv.Atoi(args[2])
		if err != nil || s <= 0 {
			fmt.Fprintf(stderr, "airlock-approve: --wait %q: want a number of seconds\n", args[2])
			return 2
		}
		wait = time.Duration(s) * time.Second
	case len(args) != 1:
		fmt.Fprint(stderr, usage)
		return 2
	}
	if deny := codexHook(stdin, "codex", wait, Request); deny != "" {
		b, _ := marshal(codexDeny(deny))
		fmt.Fprintf(stdout, "%s\n", b)
	}
	return 0
}

// codexHook asks about the tool call a Codex PreToolUse hook reads on r,
// with ask (Request), waiting at most wait (0: as long as ask does). It
// returns "" to allow the call, else why it is denied; a call that could
// not be asked about is denied, saying why.
func codexHook(r io.Reader, harness string, wait time.Duration, ask func(Ask) (Answer, error)) string {
	b, err := io.ReadAll(io.LimitReader(r, maxHookInput+1))
	if err != nil {
		return "Airlock could not read the tool call: " + err.Error()
	}
	if len(b) > maxHookInput {
		return fmt.Sprintf("Airlock could not ask for approval: the tool call is over %d bytes", maxHookInput)
	}
	var c hookCall
	if err := json.Unmarshal(b, &c); err != nil || c.ToolName == "" {
		return "Airlock could not read the tool call: want PreToolUse's JSON with tool_name and tool_input"
	}
	if c.Event != "" && c.Event != "PreToolUse" {
		return fmt.Sprintf("Airlock answers PreToolUse, not %.40q", c.Event)
	}
	input := c.ToolInput
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	ans, err := askWithin(ask, Ask{Kind: KindHarness, Harness: harness, Tool: c.ToolName, Input: Preview(input)}, wait)
	switch {
	case err != nil:
		return "Airlock could not ask for approval: " + err.Error()
	case ans.Allow:
		return ""
	case ans.Reason != "":
		return "A person denied this through Airlock's approvals: " + ans.Reason
	}
	return "A person denied this through Airlock's approvals"
}

var errNoDecision = errors.New("no decision in time")

// askWithin is ask(a) bounded by wait. A question it gives up on is left
// to the process's exit, which hangs up and so abandons it.
func askWithin(ask func(Ask) (Answer, error), a Ask, wait time.Duration) (Answer, error) {
	if wait <= 0 {
		return ask(a)
	}
	type result struct {
		ans Answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		ans, err := ask(a)
		done <- result{ans, err}
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case r := <-done:
		return r.ans, r.err
	case <-t.C:
		return Answer{}, errNoDecision
	}
}

// codexDeny is PreToolUse's output that blocks the call; Codex refuses a
// deny without a reason.
func codexDeny(reason string) map[string]any {
	return map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName":            "PreToolUse",
		"permissionDecision":       "deny",
		"permissionDecisionReason": reason,
	}}
}
