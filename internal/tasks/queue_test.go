package tasks

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestQueue(t *testing.T) {
	var started []string
	limits := map[string]int{"a": 2, "b": 1, "c": 0}
	q := newQueue(func(tenant string) int { return limits[tenant] }, func(_, id string) { started = append(started, id) })

	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		q.submit("a", id)
	}
	q.submit("b", "b1")
	q.submit("b", "b2")
	for _, id := range []string{"c1", "c2", "c3"} {
		q.submit("c", id) // 0: unlimited
	}
	if d := cmp.Diff([]string{"a1", "a2", "b1", "c1", "c2", "c3"}, started); d != "" {
		t.Fatalf("started (-want +got):\n%s", d)
	}
	if p := q.position("a", "a4"); p != 1 {
		t.Errorf("a4 waits at %d, want 1", p)
	}
	if !q.remove("a", "a3") || q.remove("a", "a3") || q.remove("a", "a1") {
		t.Fatal("remove: want true for a waiting task once, false for a running one")
	}
	started = nil
	q.done("a") // a4 next: a3 was removed
	q.done("b")
	q.done("b")
	if d := cmp.Diff([]string{"a4", "b2"}, started); d != "" {
		t.Fatalf("started after done (-want +got):\n%s", d)
	}
	q.done("a")
	q.done("a")
	for range 3 {
		q.done("c")
	}
	if len(q.tenants) != 0 {
		t.Errorf("tenants left: %v", q.tenants)
	}
}

func TestGlob(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"answer.txt", "answer.txt", true},
		{"*.txt", "answer.txt", true},
		{"*.txt", "sub/answer.txt", false},
		{"**/*.txt", "answer.txt", true},
		{"**/*.txt", "a/b/answer.txt", true},
		{"out/**", "out/a/b", true},
		{"out/**", "outside/a", false},
		{"a/**/b/*.go", "a/x/y/b/c.go", true},
		{"a/**/b/*.go", "a/b/c.go", true},
		{"a/**/b/*.go", "a/b/c/d.go", false},
	} {
		if got := matchGlob(tt.pattern, tt.name); got != tt.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../b", "[", "a/[/b", "**/a/**/b/**/c/**/d/**/e"} {
		if validGlob(bad) == nil {
			t.Errorf("validGlob(%q) accepted", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	base := func(name string) bool { return name == "base" }
	for _, tt := range []struct {
		name string
		req  Request
		ok   bool
	}{
		{"generic", Request{Harness: "generic", Command: []string{"true"}, Files: map[string]string{"a/b.txt": "x"}}, true},
		{"unknown harness", Request{Harness: "nope"}, false},
		{"codex without template", Request{Harness: "codex", Prompt: "p"}, false},
		{"generic without command", Request{Harness: "generic", Prompt: "p"}, false},
		{"absolute file", Request{Harness: "generic", Command: []string{"true"}, Files: map[string]string{"/etc/x": ""}}, false},
		{"escaping file", Request{Harness: "generic", Command: []string{"true"}, Files: map[string]string{"../x": ""}}, false},
		{"unclean file", Request{Harness: "generic", Command: []string{"true"}, Files: map[string]string{"a//b": ""}}, false},
		{"airlock env", Request{Harness: "generic", Command: []string{"true"}, Env: map[string]string{"AIRLOCK_TASK_ID": "x"}}, false},
		{"env name too long", Request{Harness: "generic", Command: []string{"true"}, Env: map[string]string{strings.Repeat("A", 129): "x"}}, false},
		{"env value with NUL", Request{Harness: "generic", Command: []string{"true"}, Env: map[string]string{"A": "x\x00"}}, false},
		{"model NUL", Request{Harness: "generic", Command: []string{"true"}, Model: &Model{BaseURL: "https://m.test/\x00"}}, false},
		{"file name too long", Request{Harness: "generic", Command: []string{"true"}, Files: map[string]string{"a/" + strings.Repeat("n", 256): ""}}, false},
		{"bad allow", Request{Harness: "generic", Command: []string{"true"}, Allow: []string{"http://x/"}}, false},
		{"allow", Request{Harness: "generic", Command: []string{"true"}, Allow: []string{"example.com", "*.example.org"}}, true},
		{"negative limits", Request{Harness: "generic", Command: []string{"true"}, Limits: Limits{MemoryMB: -1}}, false},
		{"timeout", Request{Harness: "generic", Command: []string{"true"}, TimeoutS: MaxTimeoutS + 1}, false},
		{"tarball", gitTask(&Repo{Tarball: tarOf(t, false)}), true},
		{"gzip tarball", gitTask(&Repo{Tarball: tarOf(t, true)}), true},
		{"not a tarball", gitTask(&Repo{Tarball: []byte("not a tar archive")}), false},
		{"gzip of no tarball", gitTask(&Repo{Tarball: gzipOf(t, []byte("not a tar archive"))}), false},
		{"big tarball", gitTask(&Repo{Tarball: make([]byte, MaxTarball+1)}), false},
		{"empty repo", gitTask(&Repo{}), false},
		{"both", gitTask(&Repo{Tarball: []byte("x"), Git: &GitRepo{URL: "https://git.example.com/r.git"}}), false},
		{"git", gitTask(&Repo{Git: &GitRepo{URL: "https://git.example.com/r.git", Ref: "v1.2/x"}}), true},
		{"git on a port", gitTask(&Repo{Git: &GitRepo{URL: "http://git.example.com:8080/r.git"}}), false},
		{"git off the allow-list", gitTask(&Repo{Git: &GitRepo{URL: "https://evil.example.net/r.git"}}), false},
		{"git credentials", gitTask(&Repo{Git: &GitRepo{URL: "https://u:p@git.example.com/r.git"}}), false},
		{"git ssh", gitTask(&Repo{Git: &GitRepo{URL: "ssh://git.example.com/r.git"}}), false},
		{"git ext", gitTask(&Repo{Git: &GitRepo{URL: "ext::sh -c id"}}), false},
		{"git option ref", gitTask(&Repo{Git: &GitRepo{URL: "https://git.example.com/r.git", Ref: "-x"}}), false},
		{"git dotdot ref", gitTask(&Repo{Git: &GitRepo{URL: "https://git.example.com/r.git", Ref: "a..b"}}), false},
	} {
		err := tt.req.validate(base)
		if (err == nil) != tt.ok {
			t.Errorf("%s: validate = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

// gitTask is a generic task allowed to reach git.example.com (ports 80
// and 443) with repo.
func gitTask(repo *Repo) Request {
	return Request{Harness: "generic", Command: []string{"true"}, Allow: []string{"git.example.com"}, Repo: repo}
}

func FuzzGlob(f *testing.F) {
	f.Add("**/*.txt", "a/b/c.txt")
	f.Add("a/**/**/b", "a/b")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if validGlob(pattern) != nil {
			return
		}
		matchGlob(pattern, name)
	})
}

// FuzzValidate: any request body decodes and validates without panic, and
// what validates keeps its files inside the workspace.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(`{"harness":"generic","command":["sh","-c","x"],"files":{"a/b":"c"},"artifacts":["**/*.md"],"allow":["*.example.com"]}`))
	f.Add([]byte(`{"harness":"codex","prompt":"p"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var r Request
		if json.Unmarshal(body, &r) != nil {
			return
		}
		if r.validate(func(string) bool { return true }) != nil {
			return
		}
		for p := range r.Files {
			if strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") {
				t.Fatalf("accepted file path %q", p)
			}
		}
	})
}

// tarOf is a tar archive of one file, gzip compressed or not.
func tarOf(t *testing.T, gz bool) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "a.txt", Mode: 0o644, Size: 2})
	tw.Write([]byte("a\n"))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if gz {
		return gzipOf(t, b.Bytes())
	}
	return b.Bytes()
}

func gzipOf(t *testing.T, data []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
