package e2e

import (
	"bytes"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// A generic task whose "harness" calls a model API with its bound key: the
// upstream receives the real value, put in by the egress proxy, while the
// task's sandbox only ever holds the placeholder (its environment, its
// files, every process's environment and command line).
func TestTaskSecretInjected(t *testing.T) {
	n, s := startTrusting(t)
	c := s.admin()
	real := "sk-REAL-" + randHex(16)
	must[client.Secret](t)(c.CreateSecret(ctx, client.SecretRequest{Name: "MODEL_KEY", Value: real, Hosts: []string{fakenet.AllowedName}}))
	// A grep pattern that matches the value while this script does not.
	pattern := real[:6] + "[" + real[6:7] + "]" + real[7:]
	script := `set -e
curl -sS --max-time 20 -H "Authorization: Bearer $MODEL_KEY" https://` + fakenet.AllowedName + `/echo > reply.txt
env > env.txt
p='` + pattern + `'
{ grep -rlas -e "$p" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr --exclude-dir=dev || true
  grep -las -e "$p" /proc/[0-9]*/environ /proc/[0-9]*/cmdline || true; } > leaks.txt 2>/dev/null
echo done
`
	task := must[client.Task](t)(c.CreateTask(ctx, client.TaskRequest{
		Harness: "generic", Prompt: "call the model", Command: []string{"sh", "harness.sh"},
		Files: map[string]string{"harness.sh": script}, Allow: []string{fakenet.AllowedName},
		Secrets: []string{"MODEL_KEY"}, Artifacts: []string{"reply.txt", "env.txt", "leaks.txt"}, TimeoutS: 120,
	}))
	must[int64](t)(c.FollowTask(ctx, task.ID, 0, func(client.TaskEvent) error { return nil }))
	got := must[client.Task](t)(c.GetTask(ctx, task.ID))
	if got.State != client.TaskSucceeded {
		t.Fatalf("task %+v, want succeeded", got)
	}
	read := func(path string) string {
		var buf bytes.Buffer
		must[int64](t)(c.ReadTaskArtifact(ctx, task.ID, path, &buf))
		return buf.String()
	}
	env, reply, leaks := read("env.txt"), read("reply.txt"), read("leaks.txt")
	if !strings.Contains(env, "MODEL_KEY=airlock-ph-") || strings.Contains(env, real) {
		t.Errorf("the task's environment: want the placeholder only, got %q", env)
	}
	if !strings.Contains(reply, "Authorization: Bearer airlock-ph-") || strings.Contains(reply, real) {
		t.Errorf("the echo seen in the sandbox: %q", reply)
	}
	if strings.TrimSpace(leaks) != "" {
		t.Errorf("the real value was found in the sandbox: %q", leaks)
	}
	seen := ""
	for _, r := range n.Seen() {
		if r.Name == fakenet.AllowedName {
			seen = r.Header.Get("Authorization")
		}
	}
	if seen != "Bearer "+real {
		t.Errorf("the model API received %q, want the real key", seen)
	}
	if sb, err := c.GetSandbox(ctx, got.SandboxID); err != nil || sb.State != "stopped" {
		t.Errorf("the task's sandbox: %+v, %v; want stopped", sb, err)
	}
}
