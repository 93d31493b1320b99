package e2e

import (
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/e2e/modelmock"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/tasks"
)

// TestHarnessOpenCode: the OpenCode template is built with npm from the
// fake registry (opencode-ai, whose postinstall links the native binary
// of opencode-linux-x64; e2e/harnessnode/specs/opencode.list); then
// OpenCode completes a task against the model mock speaking Chat
// Completions at the request's base URL (its config in
// OPENCODE_CONFIG_CONTENT, the key in a bearer header), with its
// models.dev catalog fetch off: the fake internet has no
// models.opencode.ai. The model is a "gpt-" one, for which OpenCode
// offers apply_patch, not edit and write, next to bash.
func TestHarnessOpenCode(t *testing.T) {
	e := startHarnessEnv(t)
	mock := modelmock.New(modelmock.Script{Command: modelmock.DefaultCommand + "; env > env.txt"})
	e.n.Handle("/opencode/", mock)
	runHarnessCase(t, e, mock, harnessCase{
		harness: tasks.HarnessOpenCode,
		model:   client.TaskModel{BaseURL: "https://" + fakenet.AllowedName + "/opencode/v1", Name: "gpt-5.5"},
		key:     bearerKey,
	})
}
