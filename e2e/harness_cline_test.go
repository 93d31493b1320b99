package e2e

import (
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/e2e/modelmock"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/tasks"
)

// TestHarnessCline: the Cline template is built with npm from the fake
// registry (cline, its @cline/* SDK tree and the Bun-compiled binary of
// @cline/cli-linux-x64; e2e/harnessnode/specs/cline.list); then Cline
// completes a task against the model mock speaking Chat Completions at the
// request's base URL (its openai-compatible provider, written to
// providers.json before it starts; the key in a bearer header), through
// its run_commands tool, with its hub daemon, feature flags
// (data.cline.bot) and telemetry (otel.cline.bot) off: the fake internet
// has none of them.
func TestHarnessCline(t *testing.T) {
	e := startHarnessEnv(t)
	mock := modelmock.New(modelmock.Script{Command: modelmock.DefaultCommand + "; env > env.txt"})
	e.n.Handle("/cline/", mock)
	runHarnessCase(t, e, mock, harnessCase{
		harness: tasks.HarnessCline,
		model:   client.TaskModel{BaseURL: "https://" + fakenet.AllowedName + "/cline/v1", Name: "gpt-4.1"},
		key:     bearerKey,
	})
}
