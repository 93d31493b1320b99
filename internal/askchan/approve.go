package askchan

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Command is the program's name inside a sandbox.
const Command = "airlock-approve"

const usage = `usage: airlock-approve "what I want to do"
       airlock-approve --mcp [--harness NAME]
       airlock-approve --hook codex [--wait SECONDS]

Asks a person, through Airlock's approvals, and waits for the decision:
exits 0 when allowed, 1 when denied or not decided in time, 2 when it
could not ask. With --mcp it serves the same question as an MCP tool,
"approve", on stdin and stdout (Claude Code's --permission-prompt-tool).
With --hook codex it is Codex's PreToolUse hook: it reads the tool call
on stdin and prints nothing to allow it, or a deny decision saying why;
--wait bounds the wait for a decision (then it denies).
`

// Main runs airlock-approve with its arguments (without the program's
// name) and returns its exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--hook" {
		return hookMain(args[1:], stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "--mcp" {
		harness := "claude"
		switch {
		case len(args) == 3 && args[1] == "--harness" && args[2] != "":
			harness = args[2]
		case len(args) != 1:
			fmt.Fprint(stderr, usage)
			return 2
		}
		if err := ServeMCP(stdin, stdout, harness); err != nil {
			fmt.Fprintf(stderr, "airlock-approve: %v\n", err)
			return 2
		}
		return 0
	}
	text := strings.TrimSpace(strings.Join(args, " "))
	if text == "" || text == "-h" || text == "--help" || text == "help" {
		fmt.Fprint(stderr, usage)
		if text == "" {
			return 2
		}
		return 0
	}
	ans, err := Request(Ask{Kind: KindCommand, Text: text})
	if err != nil {
		fmt.Fprintf(stderr, "airlock-approve: %v\n", err)
		return 2
	}
	what := "allowed"
	if !ans.Allow {
		what = "denied"
	}
	if ans.Reason != "" {
		what += ": " + ans.Reason
	}
	fmt.Fprintf(stderr, "airlock-approve: %s\n", what)
	if ans.Allow {
		return 0
	}
	return 1
}

// The MCP server: JSON-RPC 2.0, one message a line, as the protocol's
// stdio transport says. It offers one tool and answers the handful of
// methods a client calls around it.

// MCPTool is the tool's name; Claude Code names it
// mcp__<server>__approve after the server's name in its MCP config.
const MCPTool = "approve"

// mcpVersions are the protocol revisions this server speaks; a client
// asking for another gets the newest.
var mcpVersions = []string{"2025-06-18", "2025-03-26", "2024-11-05"}

// maxMCPMessage bounds one message from the harness: a tool call's input
// holds whole files (Write).
const maxMCPMessage = 64 << 20

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// permissionCall is what Claude Code passes its permission prompt tool.
type permissionCall struct {
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
}

// ServeMCP serves the approve tool on r and w until r ends. Calls are
// answered as they are decided, each in its own goroutine: a harness may
// ask about several tool calls at once.
func ServeMCP(r io.Reader, w io.Writer, harness string) error {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	send := func(m rpcMessage) {
		m.JSONRPC = "2.0"
		mu.Lock()
		enc.Encode(m)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		var m rpcMessage
		err := readLine(br, &m, maxMCPMessage)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			send(rpcMessage{ID: json.RawMessage("null"), Error: &rpcError{Code: -32700, Message: err.Error()}})
			continue
		}
		if len(m.ID) == 0 {
			continue // a notification (initialized, cancelled): nothing to answer
		}
		switch m.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(m.Params, &p)
			v := mcpVersions[0]
			for _, s := range mcpVersions {
				if s == p.ProtocolVersion {
					v = s
				}
			}
			send(rpcMessage{ID: m.ID, Result: map[string]any{
				"protocolVersion": v,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "airlock", "version": "1"},
			}})
		case "ping":
			send(rpcMessage{ID: m.ID, Result: map[string]any{}})
		case "tools/list":
			send(rpcMessage{ID: m.ID, Result: map[string]any{"tools": []any{toolSpec()}}})
		case "tools/call":
			wg.Add(1)
			go func() {
				defer wg.Done()
				send(rpcMessage{ID: m.ID, Result: callTool(m.Params, harness)})
			}()
		default:
			send(rpcMessage{ID: m.ID, Error: &rpcError{Code: -32601, Message: "method not found: " + m.Method}})
		}
	}
}

// toolSpec describes the tool (a function: the init program that holds
// this package builds nothing it does not use at start).
func toolSpec() map[string]any {
	return map[string]any{
		"name": MCPTool,
		"description": "Asks a person, through Airlock's approvals, whether a tool call may run, and waits for the decision. " +
			"Answers {\"behavior\":\"allow\",\"updatedInput\":...} or {\"behavior\":\"deny\",\"message\":...}.",
		"inputSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"tool_name":   map[string]any{"type": "string", "description": "the tool that asks permission"},
				"input":       map[string]any{"type": "object", "description": "its arguments"},
				"tool_use_id": map[string]any{"type": "string"},
			},
			"required": []string{"tool_name"},
		},
	}
}

// callTool asks about one tool call. It fails closed: a question that
// could not be asked is a denial whose message says why.
func callTool(params json.RawMessage, harness string) map[string]any {
	var p struct {
		Name      string         `json:"name"`
		Arguments permissionCall `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.Name != MCPTool {
		return toolText(true, fmt.Sprintf("unknown tool or arguments: want %s with tool_name and input", MCPTool))
	}
	input := p.Arguments.Input
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage("{}")
	}
	ans, err := Request(Ask{Kind: KindHarness, Harness: harness, Tool: p.Arguments.ToolName, Input: Preview(input)})
	var verdict map[string]any
	switch {
	case err != nil:
		verdict = map[string]any{"behavior": "deny", "message": "Airlock could not ask for approval: " + err.Error()}
	case ans.Allow:
		verdict = map[string]any{"behavior": "allow", "updatedInput": input}
	default:
		msg := "A person denied this through Airlock's approvals"
		if ans.Reason != "" {
			msg += ": " + ans.Reason
		}
		verdict = map[string]any{"behavior": "deny", "message": msg}
	}
	b, _ := marshal(verdict)
	return toolText(false, string(b))
}

// Preview is input as a person is shown it: whole up to MaxInput bytes,
// else its first bytes as text, said to be cut. The harness gets its
// own input back on an allow, never this.
func Preview(input json.RawMessage) json.RawMessage {
	if len(input) <= MaxInput {
		return input
	}
	// A character cut in two becomes U+FFFD in the encoding.
	head := input[:MaxInput-256]
	b, _ := marshal(map[string]any{"airlock_cut": fmt.Sprintf("%d bytes, shown cut short", len(input)), "head": string(head)})
	return b
}

func toolText(isError bool, text string) map[string]any {
	r := map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
	if isError {
		r["isError"] = true
	}
	return r
}

// IsCommand says the program was started as airlock-approve.
func IsCommand(argv0 string) bool {
	if i := strings.LastIndexByte(argv0, '/'); i >= 0 {
		argv0 = argv0[i+1:]
	}
	return argv0 == Command
}

// Run is airlock-approve's main.
func Run() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
