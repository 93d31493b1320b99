package tasks

import (
	"bytes"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/tasks/taskrec"
)

// TestSealedEnv: with a master key a task's env values are stored sealed
// to the task (names readable), open only to run it, and a spec moved to
// another task does not open.
func TestSealedEnv(t *testing.T) {
	box, err := secrets.NewBox(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{opts: Options{Box: box}}
	req := Request{Harness: "generic", Command: []string{"true"}, Env: map[string]string{"TOKEN": "s3cret-value", "MODE": "fast"}}
	rec := taskrec.Task{ID: "tsk_1", TenantID: "ten_a"}
	sp, err := s.seal(rec, req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sp, "s3cret-value") || strings.Contains(sp, "fast") {
		t.Fatalf("stored spec holds env values: %s", sp)
	}
	rec.Spec = sp
	shown, err := decode(rec)
	if err != nil || len(shown.Request.Env) != 2 || shown.Request.Env["TOKEN"] != "" {
		t.Errorf("decode for display: %+v %v", shown.Request.Env, err)
	}
	run, err := s.decodeToRun(rec)
	if err != nil || run.Request.Env["TOKEN"] != "s3cret-value" || run.Request.Env["MODE"] != "fast" {
		t.Errorf("decode to run: %+v %v", run.Request.Env, err)
	}
	moved := rec
	moved.ID = "tsk_2"
	if _, err := s.decodeToRun(moved); err == nil {
		t.Error("a spec copied to another task opened")
	}
	if _, err := (&Service{}).decodeToRun(rec); err == nil {
		t.Error("a sealed spec ran on a server without the key")
	}
	// Without a key the env is stored as given.
	plain, _ := (&Service{}).seal(rec, req)
	rec.Spec = plain
	if run, err := (&Service{}).decodeToRun(rec); err != nil || run.Request.Env["TOKEN"] != "s3cret-value" {
		t.Errorf("plain spec: %+v %v", run.Request.Env, err)
	}
}
