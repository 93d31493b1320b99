package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/client"
)

// TestTemplateCLI builds a template with the CLI from copied files and
// commands, reuses it for an unchanged recipe, uses it from another
// tenant, refuses what must be refused, and removes it.
func TestTemplateCLI(t *testing.T) {
	s := startServer(t, "")
	admin := s.admin()
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "tpl-user"}))
	userKey := must[client.NewKey](t)(admin.CreateKey(ctx, "tpl-user", "")).Key
	cli := s.cli
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "hello"), []byte("#!/bin/sh\necho \"hello $(cat /usr/local/lib/tools/lib/word)\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "lib", "word"), []byte("world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("hello", filepath.Join(src, "hi")); err != nil {
		t.Fatal(err)
	}
	build := []string{"template", "build", "tools", "--description", "test tools",
		"--copy", src + ":/usr/local/lib/tools",
		"--run", "mkdir -p /usr/local/bin && ln -s ../lib/tools/hi /usr/local/bin/hello",
		"--run", "echo built by $(id -un) > /usr/local/lib/tools/built.txt; echo in the home dir > ~/dropped"}

	if out, code := cli(userKey, build...); code == 0 || !strings.Contains(out, "admin") {
		t.Errorf("a tenant's key built a template: exit %d\n%s", code, out)
	}
	out, code := cli(s.adminKey, build...)
	if code != 0 || !strings.Contains(out, "step 3/3: run") || !strings.HasSuffix(out, "tools\n") {
		t.Fatalf("template build: exit %d\n%s", code, out)
	}
	first := must[client.Template](t)(admin.Template(ctx, "tools"))
	if first.From != "base" || first.Description != "test tools" || first.SizeBytes == 0 || first.Labels[client.RecipeLabel] == "" {
		t.Errorf("template %+v", first)
	}
	// The same recipe is not built again; a changed file is.
	if out, code := cli(s.adminKey, build...); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("second build: exit %d\n%s", code, out)
	}
	if out, code := cli(userKey, "template", "ls"); code != 0 || !strings.Contains(out, "tools") || !strings.Contains(out, "base") {
		t.Errorf("template ls: exit %d\n%s", code, out)
	}

	// Another tenant's sandboxes start from it, and cannot change it.
	user := client.New(s.url, userKey)
	sb := must[client.Sandbox](t)(user.CreateSandbox(ctx, client.CreateRequest{Template: "tools"}))
	res := must[client.ExecResult](t)(user.Exec(ctx, sb.ID, client.ExecRequest{Command: "hello; cat /usr/local/lib/tools/built.txt; ls ~"}))
	if res.ExitCode != 0 || res.Stdout != "hello world\nbuilt by user\n" {
		t.Errorf("sandbox on the template: %+v", res)
	}
	if res := must[client.ExecResult](t)(user.Exec(ctx, sb.ID, client.ExecRequest{Command: "echo x > /usr/local/lib/tools/hello"})); res.ExitCode == 0 {
		t.Error("a sandbox wrote its template")
	}
	if _, err := user.CommitTemplate(ctx, client.CommitTemplateRequest{Name: "mine", SandboxID: sb.ID}); !isStatus(err, 403) {
		t.Errorf("tenant commit: %v", err)
	}

	// A failing step fails the build, leaves the template as it was and
	// the build sandbox gone.
	if err := os.WriteFile(filepath.Join(src, "lib", "word"), []byte("again\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	failing := append(append([]string{}, build...), "--run", "echo failing step; exit 7")
	if out, code := cli(s.adminKey, failing...); code == 0 || !strings.Contains(out, "exited 7") || !strings.Contains(out, "failing step") {
		t.Errorf("failing build: exit %d\n%s", code, out)
	}
	if now := must[client.Template](t)(admin.Template(ctx, "tools")); !now.CreatedAt.Equal(first.CreatedAt) || now.Labels[client.RecipeLabel] != first.Labels[client.RecipeLabel] {
		t.Errorf("a failed build changed the template: %+v", now)
	}
	left := must[client.Page](t)(admin.ListSandboxes(ctx, client.ListOptions{State: "running", Metadata: map[string]string{"airlock.template-build": "tools"}}))
	if len(left.Sandboxes) != 0 {
		t.Errorf("build sandboxes left running: %+v", left.Sandboxes)
	}
	for _, bad := range [][]string{
		{"template", "build", "tools"},                                // no step
		{"template", "build", "tools", "--copy", "nowhere:/x"},        // no such file
		{"template", "build", "tools", "--copy", src + ":rel"},        // relative destination
		{"template", "build", "Bad_Name", "--run", "true"},            // bad name
		{"template", "build", "base", "--run", "true"},                // reserved
		{"template", "build", "x", "--from", "nope", "--run", "true"}, // unknown base
	} {
		if out, code := cli(s.adminKey, bad...); code == 0 {
			t.Errorf("%v: exit 0\n%s", bad, out)
		}
	}

	if out, code := cli(s.adminKey, "template", "rm", "tools"); code != 0 {
		t.Fatalf("template rm: exit %d\n%s", code, out)
	}
	if _, err := user.CreateSandbox(ctx, client.CreateRequest{Template: "tools"}); !isStatus(err, 404) {
		t.Errorf("create from a removed template: %v", err)
	}
	// The sandbox started on it still has it.
	if res := must[client.ExecResult](t)(user.Exec(ctx, sb.ID, client.ExecRequest{Command: "hello"})); res.Stdout != "hello world\n" {
		t.Errorf("sandbox after rm: %+v", res)
	}
	if out, code := cli(s.adminKey, "template", "rm", "tools"); code == 0 {
		t.Errorf("second rm: exit 0\n%s", out)
	}
}

// isStatus says whether err is the server's answer with that HTTP status.
func isStatus(err error, status int) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status == status
}
