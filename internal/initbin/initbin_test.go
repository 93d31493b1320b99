package initbin

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/airlockhq/airlock/internal/testenv"
)

// TestEmbeddedInitFresh: the init embedded here is what its sources build
// now. A stale one (the agent changed, go generate was not run) would run
// old code in every sandbox while the daemon speaks the new.
func TestEmbeddedInitFresh(t *testing.T) {
	embedded := []byte(Program())
	if len(embedded) == 0 {
		testenv.Lacking(t, "no sandbox init is embedded: run go generate ./internal/initbin (the test runner, go run ./internal/testenv/gotest, does)")
	}
	goTool := testenv.LookPath(t, "go", "golang")
	out := filepath.Join(t.TempDir(), Name)
	cmd := exec.Command(goTool, BuildArgs(out)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the init: %v\n%s", err, b)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, embedded) {
		t.Errorf("the embedded sandbox init (%d bytes) is not what its sources build (%d bytes): run go generate ./internal/initbin, then rebuild", len(embedded), len(fresh))
	}
}
