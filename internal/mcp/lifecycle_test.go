package mcp

import (
	"strings"
	"testing"

	"github.com/airlockhq/airlock/client/clienttest"
)

// TestLifecycleTools: pause refuses commands until resume; a snapshot
// lists and starts a sandbox with the files; fork makes count sandboxes.
func TestLifecycleTools(t *testing.T) {
	fake := clienttest.NewServer(t)
	cs := connect(t, fake, fake.AdminKey)
	out, res := callTool(t, cs, "sandbox_create", map[string]any{})
	id, _ := out["sandbox_id"].(string)
	if res.IsError || id == "" {
		t.Fatalf("sandbox_create: %s", resultText(res))
	}
	if _, res := callTool(t, cs, "write_file", map[string]any{"sandbox_id": id, "path": "f", "content": "kept"}); res.IsError {
		t.Fatal(resultText(res))
	}
	if out, res := callTool(t, cs, "sandbox_pause", map[string]any{"sandbox_id": id}); res.IsError || out["state"] != "paused" {
		t.Fatalf("sandbox_pause: %s %v", resultText(res), out)
	}
	if _, res := callTool(t, cs, "read_file", map[string]any{"sandbox_id": id, "path": "f"}); !res.IsError || !strings.Contains(resultText(res), "paused") {
		t.Errorf("read_file while paused: %v %q", res.IsError, resultText(res))
	}
	if out, res := callTool(t, cs, "sandbox_resume", map[string]any{"sandbox_id": id}); res.IsError || out["state"] != "running" {
		t.Fatalf("sandbox_resume: %s %v", resultText(res), out)
	}
	out, res = callTool(t, cs, "sandbox_snapshot", map[string]any{"sandbox_id": id, "name": "s1"})
	if res.IsError || out["name"] != "s1" {
		t.Fatalf("sandbox_snapshot: %s %v", resultText(res), out)
	}
	if out, res := callTool(t, cs, "snapshot_list", map[string]any{}); res.IsError || len(out["snapshots"].([]any)) != 1 {
		t.Errorf("snapshot_list: %s %v", resultText(res), out)
	}
	out, res = callTool(t, cs, "sandbox_create", map[string]any{"snapshot": "s1"})
	child, _ := out["sandbox_id"].(string)
	if res.IsError || child == "" {
		t.Fatalf("sandbox_create from s1: %s", resultText(res))
	}
	if out, res := callTool(t, cs, "read_file", map[string]any{"sandbox_id": child, "path": "f"}); res.IsError || out["content"] != "kept" {
		t.Errorf("the snapshot's file: %s %v", resultText(res), out)
	}
	out, res = callTool(t, cs, "sandbox_fork", map[string]any{"sandbox_id": id, "count": 2})
	if ids, _ := out["sandbox_ids"].([]any); res.IsError || len(ids) != 2 {
		t.Errorf("sandbox_fork: %s %v", resultText(res), out)
	}
	if _, res := callTool(t, cs, "snapshot_delete", map[string]any{"name": "s1"}); res.IsError {
		t.Errorf("snapshot_delete: %s", resultText(res))
	}
	if _, res := callTool(t, cs, "snapshot_delete", map[string]any{"name": "s1"}); !res.IsError {
		t.Error("deleting s1 twice succeeded")
	}
}
