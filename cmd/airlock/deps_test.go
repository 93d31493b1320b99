package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// heavyDeps are packages the airlock binary must not link: their package
// init (client-go's scheme registers about fifty API groups) runs at the
// start of every CLI call, airlock run and exec included, and they take
// the binary from about 40 MB to 100 MB. internal/cluster speaks to
// Kubernetes through its own small client instead; tests may use them.
var heavyDeps = []string{
	"k8s.io/client-go/kubernetes", // the typed clientset, and kubernetes/scheme under it
	"k8s.io/client-go/tools/leaderelection",
	"helm.sh/helm/v4",
}

// TestBinaryDeps keeps heavyDeps out of the binary.
func TestBinaryDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the binary's packages:", err)
	}
	// GOFLAGS (build tags, -mod) come from the environment, as for the
	// build itself.
	cmd := exec.Command(goTool, "list", "-deps", "github.com/airlockhq/airlock/cmd/airlock")
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, heavy := range heavyDeps {
			if pkg == heavy || strings.HasPrefix(pkg, heavy+"/") {
				t.Errorf("the airlock binary links %s (under %s): every CLI call would pay its package init, and the binary its size; reach Kubernetes through internal/cluster's Kube", pkg, heavy)
			}
		}
	}
}
