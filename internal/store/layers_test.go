package store

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/airlockhq/airlock/"

// TestRecordLeaves keeps the packages that own records apart from store
// as the design has them: a record package imports nothing of Airlock's
// (store imports it, so any import of its would risk a cycle), and the
// domain packages that persist through narrow stores of their own do not
// reach for the whole store.
func TestRecordLeaves(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the packages' imports:", err)
	}
	leaves := []string{"internal/sandbox/sandboxrec", "internal/events/eventrec", "internal/tasks/taskrec"}
	apart := []string{"internal/events", "internal/tasks", "internal/tenancy"}
	args := []string{"list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}
	for _, p := range append(leaves, apart...) {
		args = append(args, module+p)
	}
	cmd := exec.Command(goTool, args...)
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[strings.TrimPrefix(f[0], module)] = f[1:]
	}
	for _, p := range leaves {
		for _, imp := range imports[p] {
			if strings.HasPrefix(imp, module) {
				t.Errorf("%s imports %s: a record package must import nothing of Airlock's", p, imp)
			}
		}
	}
	for _, p := range apart {
		if len(imports[p]) == 0 {
			t.Errorf("go list said nothing of %s", p)
		}
		for _, imp := range imports[p] {
			if imp == module+"internal/store" {
				t.Errorf("%s imports internal/store: it persists through its own narrow Store", p)
			}
		}
	}
}
