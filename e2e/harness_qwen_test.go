package e2e

import (
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/e2e/modelmock"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/tasks"
)

// TestHarnessQwen: the Qwen Code template is built with npm from the fake
// registry (the CLI and its optional native modules,
// e2e/harnessnode/specs/qwen.list); then Qwen Code, on the template's
// Node 20 though its package asks for 22, completes a task against the
// model mock speaking Chat Completions at the request's base URL (the key
// a bearer token), with its usage statistics (Aliyun RUM) and its
// keyless preconnect HEAD off: the mock would record the HEAD without
// the key, and the fake internet has no RUM.
func TestHarnessQwen(t *testing.T) {
	e := startHarnessEnv(t)
	mock := modelmock.New(modelmock.Script{Command: modelmock.DefaultCommand + "; env > env.txt"})
	e.n.Handle("/qwen/", mock)
	runHarnessCase(t, e, mock, harnessCase{
		harness: tasks.HarnessQwen,
		model:   client.TaskModel{BaseURL: "https://" + fakenet.AllowedName + "/qwen/v1", Name: "qwen3-coder-plus"},
		key:     bearerKey,
	})
}
