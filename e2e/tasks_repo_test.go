package e2e

import (
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
)

// TestTaskRepoGit: a task's workspace is a git repository its sandbox
// clones through the egress proxy from a server in the fake internet (a
// branch, or the default HEAD); a host off the allow-list is refused at
// submit, and a clone that fails fails the task with git's reason.
func TestTaskRepoGit(t *testing.T) {
	n, s := startTrusting(t)
	c := s.admin()
	root := t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	work := filepath.Join(root, "work")
	os.MkdirAll(work, 0o755)
	git(work, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(work, "hello.txt"), []byte("hello from git\n"), 0o644)
	git(work, "add", ".")
	git(work, "commit", "-q", "-m", "first")
	git(work, "checkout", "-q", "-b", "feature")
	os.WriteFile(filepath.Join(work, "feature.txt"), []byte("feature branch\n"), 0o644)
	git(work, "add", ".")
	git(work, "commit", "-q", "-m", "feature")
	git(work, "checkout", "-q", "main")
	git(root, "clone", "-q", "--bare", "work", "repo.git")
	// git's own smart HTTP server, as a forge runs it.
	n.Handle("/git/", &cgi.Handler{Path: gitHTTPBackend(t), Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
	url := "http://" + fakenet.AllowedName + "/git/repo.git"

	run := func(repo *client.GitRepo, command string) (client.Task, string) {
		t.Helper()
		task := must[client.Task](t)(c.CreateTask(ctx, client.TaskRequest{
			Harness: "generic", Command: []string{"sh", "-c", command},
			Repo: &client.TaskRepo{Git: repo}, Allow: []string{fakenet.AllowedName},
		}))
		var out []string
		must[int64](t)(c.FollowTask(ctx, task.ID, 0, func(e client.TaskEvent) error {
			if e.Type == "message" {
				out = append(out, e.Text)
			}
			return nil
		}))
		return must[client.Task](t)(c.GetTask(ctx, task.ID)), strings.Join(out, "\n")
	}
	got, out := run(&client.GitRepo{URL: url}, "cat hello.txt; ls; git log --format=%s; echo more >> hello.txt")
	if got.State != client.TaskSucceeded || out != "hello from git\nhello.txt\nfirst" {
		t.Fatalf("clone of HEAD: %+v\n%s", got, out)
	}
	if a := must[client.TaskArtifacts](t)(c.TaskArtifacts(ctx, got.ID)); a.Diff == nil || !strings.Contains(a.Diff.Text, "+more") || strings.Contains(a.Diff.Text, "+hello from git") {
		t.Errorf("diff against the clone: %+v", a.Diff)
	}
	if got.Repo == nil || got.Repo.Git == nil || got.Repo.Git.URL != url {
		t.Errorf("task shows repo %+v", got.Repo)
	}
	if got, out := run(&client.GitRepo{URL: url, Ref: "feature"}, "cat feature.txt"); got.State != client.TaskSucceeded || out != "feature branch" {
		t.Errorf("clone of a branch: %+v\n%s", got, out)
	}
	if got, _ := run(&client.GitRepo{URL: url, Ref: "no-such-branch"}, "true"); got.State != client.TaskFailed || !strings.Contains(got.Reason, "git clone") {
		t.Errorf("clone of a missing branch: %+v", got)
	}
	for _, bad := range []client.TaskRequest{
		{Harness: "generic", Command: []string{"true"}, Repo: &client.TaskRepo{Git: &client.GitRepo{URL: "http://" + fakenet.DeniedName + "/x.git"}}, Allow: []string{fakenet.AllowedName}},
		{Harness: "generic", Command: []string{"true"}, Repo: &client.TaskRepo{Git: &client.GitRepo{URL: "http://user:pw@" + fakenet.AllowedName + "/x.git"}}, Allow: []string{fakenet.AllowedName}},
		{Harness: "generic", Command: []string{"true"}, Repo: &client.TaskRepo{Git: &client.GitRepo{URL: "ext::sh -c id"}}, Allow: []string{fakenet.AllowedName}},
		{Harness: "generic", Command: []string{"true"}, Repo: &client.TaskRepo{Git: &client.GitRepo{URL: url, Ref: "--upload-pack=id"}}, Allow: []string{fakenet.AllowedName}},
		{Harness: "generic", Command: []string{"true"}, Repo: &client.TaskRepo{Tarball: []byte("x"), Git: &client.GitRepo{URL: url}}, Allow: []string{fakenet.AllowedName}},
		{Harness: "generic", Command: []string{"true"}, Repo: &client.TaskRepo{}},
	} {
		if _, err := c.CreateTask(ctx, bad); !isStatus(err, 400) {
			t.Errorf("repo %+v: %v, want 400", bad.Repo, err)
		}
	}
}

func gitHTTPBackend(t *testing.T) string {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
}
