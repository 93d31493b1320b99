// Package mcp is Airlock's Model Context Protocol bridge: one set of tools
// and resources (sandboxes, commands, shells, files, processes, logs) served
// over streamable HTTP by `airlock serve` and over stdio by `airlock mcp`.
//
// Every tool call becomes calls of the public REST API through the Go
// client, with the caller's own credential, so tenants, quotas and the audit
// log apply exactly as they do to the API. It must never reach the sandbox
// service, the store or the runtime directly: a tool that did would be a
// back door around them.
//
// A failed call comes back as a tool error (isError) whose text tells a
// model what to do next, never as a protocol error.
//
// It speaks every protocol revision go-sdk does, 2026-07-28 (stateless,
// SEP-2575) and the initialize-handshake ones before it; over HTTP the two
// eras are served side by side (http.go). Its one question to a client's
// user is an approval a sandbox waits on while a call runs (ask.go): up to
// 2025-11-25 as an elicitation request during the call, from 2026-07-28 as
// the call's input_required result (SEP-2322), whose requestState it signs
// and checks, never trusting what the client hands back. It asks for
// nothing else (no sampling, no roots).
package mcp

import (
	"context"
	"errors"
	"fmt"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

// Version is what the server reports as its implementation version.
var Version = "dev"

// ClientFunc returns the API client that serves one request: over HTTP the
// one built from the request's bearer key, over stdio the process's own.
type ClientFunc func(extra *mcpsdk.RequestExtra) (*client.Client, error)

// Fixed serves every request with c (stdio: one user per process).
func Fixed(c *client.Client) ClientFunc {
	return func(*mcpsdk.RequestExtra) (*client.Client, error) { return c, nil }
}

// NewServer returns an MCP server with Airlock's tools and resources, each
// call made with the client cf returns for it. The requestState it hands a
// 2026-07-28 client is signed with a key of this process's own: a retry
// must come back to it (as over stdio).
func NewServer(cf ClientFunc) *mcpsdk.Server { return newServer(cf, nil) }

// newServer is NewServer signing requestState with a key derived from
// stateKey (nil: a random one).
func newServer(cf ClientFunc, stateKey []byte) *mcpsdk.Server {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "airlock", Title: "Airlock sandboxes", Version: Version},
		&mcpsdk.ServerOptions{Instructions: instructions})
	b := &bridge{client: cf, state: newSealer(stateKey)}
	b.addSandboxTools(s)
	b.addLifecycleTools(s)
	b.addExecTools(s)
	b.addFileTools(s)
	b.addLogTools(s)
	b.addTaskTools(s)
	b.addApprovalTools(s)
	b.addResources(s)
	return s
}

const instructions = `Airlock runs commands in isolated Linux sandboxes.
Create one with sandbox_create, then use run_command (one-off commands), shell
(a persistent bash whose cwd and variables carry over between calls),
write_file/read_file/list_files/delete_file, and destroy it with
sandbox_destroy when done. Sandboxes expire after their timeout (default
300 s); extend one with sandbox_extend. Relative paths are under /home/user.
task_run runs a whole task (an agent harness, or any command) in a sandbox of
its own and returns its outcome and workspace diff.
A sandbox whose network policy asks may hold a connection until a person
allows it: a call held so asks the person at your MCP client, if the client
can be asked, and its result lists the approvals it waited on. approval_list
and approval_decide are for an operator deciding as a person told them to.`

// bridge holds what every tool handler needs.
type bridge struct {
	client ClientFunc
	state  sealer // signs the requestState of input_required results
}

// apiClient is the client for a tool call or resource read.
func (b *bridge) apiClient(extra *mcpsdk.RequestExtra) (*client.Client, error) {
	c, err := b.client(extra)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errors.New("no Airlock credential for this request")
	}
	return c, nil
}

// toolError turns an API error into a message a model can act on. id is
// the sandbox the call was about ("" if none): when the API says not found
// or conflict, it asks whether that sandbox ended, to say when and why.
func toolError(ctx context.Context, c *client.Client, id string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("cancelled: %w", ctx.Err())
	}
	if id != "" && (errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrConflict)) {
		if msg, ok := sandboxGone(ctx, c, id); ok {
			return errors.New(msg)
		}
	}
	switch {
	case errors.Is(err, client.ErrUnauthenticated):
		return fmt.Errorf("the Airlock API key was refused (%v); check AIRLOCK_API_KEY or the Authorization header", err)
	case errors.Is(err, client.ErrForbidden):
		return fmt.Errorf("not allowed with this credential: %v", err)
	case errors.Is(err, client.ErrLimitExceeded):
		return fmt.Errorf("limit reached: %v; destroy sandboxes you no longer need (sandbox_list, sandbox_destroy) or ask for less", err)
	case errors.Is(err, client.ErrInvalid):
		return fmt.Errorf("invalid argument: %v", err)
	case errors.Is(err, client.ErrUnavailable):
		return fmt.Errorf("airlock is unavailable right now (%v); retry shortly", err)
	}
	var ce *client.Error
	if errors.As(err, &ce) {
		return err // the API's own message names what and why
	}
	return fmt.Errorf("calling the Airlock API: %v", err)
}

// sandboxGone explains, when sandbox id is gone or unknown to this
// credential, what happened to it (client.SandboxEnded, as the CLI says
// it) and what a model can do next. ok is false while it runs: what was
// not found was something in it (a file, a process) and the API's
// message stands.
func sandboxGone(ctx context.Context, c *client.Client, id string) (msg string, ok bool) {
	var ended *client.EndedError
	switch err := c.SandboxEnded(ctx, id); {
	case errors.Is(err, client.ErrNotFound):
		return fmt.Sprintf("sandbox %s not found or already destroyed; create a new one with sandbox_create", id), true
	case errors.As(err, &ended) && ended.Sandbox.Reason == "expired":
		return ended.Error() + " because its timeout ran out; create a new one with sandbox_create, and use sandbox_extend to keep one alive longer", true
	case errors.As(err, &ended):
		return ended.Error() + "; create a new one with sandbox_create", true
	}
	return "", false
}
