package live

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports: live never reaches the sandbox layer, the store or HTTP, as
// its package comment says; the data flows one way, sandbox -> live.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/airlockhq/airlock/"
	for _, imp := range pkg.Imports {
		for _, banned := range []string{mod + "internal/sandbox", mod + "internal/store", mod + "internal/api", "net/http"} {
			if imp == banned || strings.HasPrefix(imp, banned+"/") {
				t.Errorf("internal/live imports %s", imp)
			}
		}
	}
}
