package linux_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/runtime"
)

// createSpec creates a sandbox from spec (its ID filled in) that is
// destroyed when the test ends.
func createSpec(t *testing.T, spec runtime.Spec) runtime.Sandbox {
	t.Helper()
	r := testRuntime(t)
	spec.ID = fmt.Sprintf("t%d-%d", os.Getpid(), seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := r.Create(ctx, spec)
	if err != nil {
		t.Fatalf("create sandbox %+v: %v", spec, err)
	}
	t.Cleanup(func() {
		if err := sb.Destroy(context.Background()); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("destroy sandbox %s: %v", spec.ID, err)
		}
	})
	return sb
}

func templateNamed(t *testing.T, name string) (runtime.TemplateInfo, bool) {
	t.Helper()
	ts, err := testRuntime(t).Templates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ts[0].Name != "base" {
		t.Errorf("templates %v: base is not first", ts)
	}
	for _, tm := range ts {
		if tm.Name == name {
			return tm, true
		}
	}
	return runtime.TemplateInfo{}, false
}

// TestTemplateBuild builds a template in a build sandbox, uses it, builds a
// second one on it, replaces the first while a sandbox runs on it, and
// deletes both.
func TestTemplateBuild(t *testing.T) {
	r := testRuntime(t)
	ctx := context.Background()
	name := fmt.Sprintf("tmpl-%d", os.Getpid())
	hostLocal, _ := os.ReadDir("/usr/local")

	// A plain sandbox cannot write /usr/local.
	plain := createSpec(t, runtime.Spec{})
	if res := sh(t, plain, "mkdir -p /usr/local/bin && echo x > /usr/local/bin/nope"); res.st.Code == 0 {
		t.Fatal("a sandbox that is not a build wrote /usr/local")
	}
	if _, err := r.CommitTemplate(ctx, plain.ID(), runtime.TemplateInfo{Name: name}); !errors.Is(err, runtime.ErrInvalid) {
		t.Fatalf("commit of a sandbox that is not a build: %v", err)
	}

	build := createSpec(t, runtime.Spec{Build: true})
	mustSh(t, build, `set -e
		mkdir -p /usr/local/lib/hello /usr/local/bin
		printf '#!/bin/sh\necho hello from the template\n' > /usr/local/lib/hello/hello.sh
		chmod 755 /usr/local/lib/hello/hello.sh
		ln -s ../lib/hello/hello.sh /usr/local/bin/hello
		ln /usr/local/lib/hello/hello.sh /usr/local/lib/hello/same.sh
		echo setuid > /usr/local/lib/hello/suid && chmod 4755 /usr/local/lib/hello/suid
		echo kept-out > /home/user/not-kept
		ln -s /etc/hostname /usr/local/lib/hello/link`)
	// Files of the host's /usr/local stay read-only to the build.
	for _, e := range hostLocal {
		if e.IsDir() {
			if res := sh(t, build, "ls /usr/local/"+e.Name()+" >/dev/null"); res.st.Code != 0 {
				t.Errorf("build cannot see the host's /usr/local/%s: %+v", e.Name(), res)
			}
		}
	}
	for _, bad := range []string{"", "base", "Bad_Name", strings.Repeat("x", 64), "-x"} {
		if _, err := r.CommitTemplate(ctx, build.ID(), runtime.TemplateInfo{Name: bad}); !errors.Is(err, runtime.ErrInvalid) {
			t.Errorf("commit as %q: %v, want invalid", bad, err)
		}
	}
	info, err := r.CommitTemplate(ctx, build.ID(), runtime.TemplateInfo{Name: name, Labels: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.DeleteTemplate(context.Background(), name) })
	if info.From != "base" || info.SizeBytes == 0 || info.CreatedAt.IsZero() {
		t.Errorf("committed %+v", info)
	}
	if got, ok := templateNamed(t, name); !ok || got.Labels["k"] != "v" {
		t.Errorf("listed %+v %v", got, ok)
	}

	use := createSpec(t, runtime.Spec{Template: name})
	if out := mustSh(t, use, "hello"); out != "hello from the template\n" {
		t.Errorf("hello printed %q", out)
	}
	if out := mustSh(t, use, "stat -c '%h %a' /usr/local/lib/hello/same.sh /usr/local/lib/hello/suid; test ! -e /home/user/not-kept && echo home-clean; readlink /usr/local/lib/hello/link"); out != "2 755\n1 755\nhome-clean\n/etc/hostname\n" {
		t.Errorf("links, modes, home: %q", out)
	}
	if res := sh(t, use, "echo x > /usr/local/lib/hello/hello.sh || echo x > /usr/local/new"); res.st.Code == 0 {
		t.Error("a sandbox wrote its template's layer")
	}
	for _, e := range hostLocal {
		if res := sh(t, use, "test -e /usr/local/"+e.Name()); res.st.Code != 0 {
			t.Errorf("template hides the host's /usr/local/%s", e.Name())
		}
	}
	if out := mustSh(t, use, "cat /proc/self/mountinfo"); strings.Contains(out, r.StateDir()) {
		t.Errorf("mountinfo shows the state dir:\n%s", out)
	}

	// A build on the template sees its layer and adds to it.
	build2 := createSpec(t, runtime.Spec{Template: name, Build: true})
	mustSh(t, build2, "hello && printf '#!/bin/sh\\necho second\\n' > /usr/local/bin/second && chmod 755 /usr/local/bin/second")
	name2 := name + "-2"
	if info, err := r.CommitTemplate(ctx, build2.ID(), runtime.TemplateInfo{Name: name2}); err != nil || info.From != name {
		t.Fatalf("commit on a template: %+v %v", info, err)
	}
	t.Cleanup(func() { r.DeleteTemplate(context.Background(), name2) })
	use2 := createSpec(t, runtime.Spec{Template: name2})
	if out := mustSh(t, use2, "hello; second"); out != "hello from the template\nsecond\n" {
		t.Errorf("second template printed %q", out)
	}

	// A commit ends the build's processes: nothing it runs can change the
	// files while the host reads them.
	if _, err := build2.Exec(ctx, runtime.ExecRequest{Argv: []string{"true"}}); err == nil {
		t.Error("the build sandbox still runs commands after its commit")
	}

	// Replacing the first template leaves the running sandbox its layer.
	build3 := createSpec(t, runtime.Spec{Build: true})
	mustSh(t, build3, "mkdir -p /usr/local/bin && printf '#!/bin/sh\\necho replaced\\n' > /usr/local/bin/hello && chmod 755 /usr/local/bin/hello")
	if _, err := r.CommitTemplate(ctx, build3.ID(), runtime.TemplateInfo{Name: name}); err != nil {
		t.Fatal(err)
	}
	if out := mustSh(t, use, "hello"); out != "hello from the template\n" {
		t.Errorf("running sandbox after replace printed %q", out)
	}
	use3 := createSpec(t, runtime.Spec{Template: name})
	if out := mustSh(t, use3, "hello"); out != "replaced\n" {
		t.Errorf("new sandbox after replace printed %q", out)
	}

	// The replaced layer goes with the last sandbox on it.
	oldLayers, _ := filepath.Glob(filepath.Join(r.StateDir(), "templates", "."+name+"@*"))
	if len(oldLayers) != 2 {
		t.Fatalf("layers of %s: %v, want the old and the new", name, oldLayers)
	}
	for _, sb := range []runtime.Sandbox{use, build2} {
		if err := sb.Destroy(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(r.StateDir(), "templates", "."+name+"@*")); len(left) != 1 {
		t.Errorf("layers of %s after its old one's last sandbox: %v", name, left)
	}

	if err := r.DeleteTemplate(ctx, name2); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(ctx, runtime.Spec{ID: "gone-" + name, Template: name2}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("create from a deleted template: %v", err)
	}
	if err := r.DeleteTemplate(ctx, name2); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	// Once every sandbox on a deleted or replaced layer is gone, so is the layer.
	for _, sb := range []runtime.Sandbox{use2, use3, build, build3} {
		if err := sb.Destroy(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.DeleteTemplate(ctx, name); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(r.StateDir(), "templates", "."+name+"*"))
	if len(left) != 0 {
		t.Errorf("layers left after delete: %v", left)
	}
}
