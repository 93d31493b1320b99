package e2e

import (
	"net/http"
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/e2e/modelmock"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/tasks"
)

// TestHarnessGemini: the Gemini CLI template is built with npm from the
// fake registry (the CLI and its optional native modules,
// e2e/harnessnode/specs/gemini.list, whose build scripts npm does not
// run); then Gemini CLI completes a task against the model mock speaking
// the Gemini API (streamGenerateContent, the key in x-goog-api-key) at
// the request's base URL, with its usage statistics (play.googleapis.com)
// and telemetry off: the fake internet has neither.
func TestHarnessGemini(t *testing.T) {
	e := startHarnessEnv(t)
	mock := modelmock.New(modelmock.Script{Command: modelmock.DefaultCommand + "; env > env.txt"})
	e.n.Handle("/gemini/", mock)
	runHarnessCase(t, e, mock, harnessCase{
		harness: tasks.HarnessGemini,
		model:   client.TaskModel{BaseURL: "https://" + fakenet.AllowedName + "/gemini", Name: "gemini-2.5-flash"},
		key:     func(h http.Header) string { return h.Get("X-Goog-Api-Key") },
	})
}
