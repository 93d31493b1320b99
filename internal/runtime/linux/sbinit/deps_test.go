package sbinit

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/testenv"
)

// TestInitDeps: the sandbox init imports nothing beyond testdata/deps.txt.
// Each sandbox start runs the init's package initialisation; the daemon's
// dependencies (telemetry, gRPC, SQLite, ...) once cost every sandbox
// ~25 ms there, and nothing noticed. A new import fails here until it is
// added to the list on purpose.
func TestInitDeps(t *testing.T) {
	goTool := testenv.LookPath(t, "go", "golang")
	out, err := exec.Command(goTool, "list", "-deps", "github.com/airlockhq/airlock/cmd/airlock-init").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	got := strings.Fields(string(out))
	f, err := os.Open("testdata/deps.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var allowed []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			allowed = append(allowed, l)
		}
	}
	var extra []string
	for _, p := range got {
		if !slices.Contains(allowed, p) {
			extra = append(extra, p)
		}
	}
	if len(extra) > 0 {
		t.Errorf("the sandbox init (cmd/airlock-init) now imports %d packages beyond testdata/deps.txt, each paid for by every sandbox start:\n  %s\nremove the import, or add them to the list if the init cannot do without them", len(extra), strings.Join(extra, "\n  "))
	}
	if len(got) < len(allowed) {
		t.Logf("the init imports %d packages, the list allows %d: it can shrink", len(got), len(allowed))
	}
}
