package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/e2e/modelmock"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/tasks"
)

// TestHarnessPi: the pi template is built with npm from the fake
// registry (pi's whole dependency tree, e2e/harnessnode/specs/pi.list);
// then pi completes a task against the model mock speaking Anthropic's
// Messages API at the request's base URL (in the models.json pi's
// wrapper writes). The model name is one pi does not know, so it runs as
// a custom id of the anthropic provider. Pi's only traffic is the model
// calls: the sandbox connected nowhere else, and the mock got nothing but
// Messages calls.
func TestHarnessPi(t *testing.T) {
	e := startHarnessEnv(t)
	mock := modelmock.New(modelmock.Script{Command: modelmock.DefaultCommand + "; env > env.txt"})
	e.n.Handle("/pi/", mock)
	before := len(mock.Requests())
	runHarnessCase(t, e, mock, harnessCase{
		harness: tasks.HarnessPi,
		model:   client.TaskModel{BaseURL: "https://" + fakenet.AllowedName + "/pi", Name: "mock"},
		key:     func(h http.Header) string { return h.Get("X-Api-Key") },
	})
	for _, r := range mock.Requests()[before:] {
		if r.Method != http.MethodPost || r.Path != "/pi/v1/messages" {
			t.Errorf("pi sent the model host %s %s", r.Method, r.Path)
		}
	}
	c := e.s.admin()
	page := must[client.TaskPage](t)(c.ListTasks(ctx, client.TaskListOptions{Harness: tasks.HarnessPi}))
	if len(page.Tasks) != 1 {
		t.Fatalf("%d pi tasks", len(page.Tasks))
	}
	conns := 0
	err := c.AuditLog(ctx, page.Tasks[0].SandboxID, client.AuditQuery{Types: []string{"net.connection"}}, func(ev client.AuditEvent) error {
		conns++
		var conn struct {
			Host     string `json:"host"`
			Decision string `json:"decision"`
		}
		json.Unmarshal(ev.Data, &conn)
		if !strings.EqualFold(conn.Host, fakenet.AllowedName) {
			t.Errorf("pi's sandbox connected to %s (%s)", conn.Host, conn.Decision)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if conns == 0 {
		t.Error("no net.connection events: the model calls are missing from the audit log")
	}
}
