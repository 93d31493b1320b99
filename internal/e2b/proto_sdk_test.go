package e2b

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/runtime/linux/linuxtest"
)

// TestProtoMatchesSDK diffs proto/*.proto against the envd descriptors the
// pinned e2b SDK embeds (printed by e2e/e2bnode/descriptors.mjs): every
// message, field name, number, type and repetition, enum value and rpc,
// so that a re-authored file cannot quietly differ from the specification.
func TestProtoMatchesSDK(t *testing.T) {
	dir, err := filepath.Abs("../../e2e/e2bnode")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join(dir, "node_modules", "e2b")); err != nil || statErr != nil {
		linuxtest.Lacking(t, "the .proto check against the E2B SDK", "needs node and e2e/e2bnode/node_modules (npm ci in e2e/e2bnode)")
	}
	cmd := exec.Command(node, "descriptors.mjs")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node descriptors.mjs: %v", err)
	}
	sdk := strings.Split(strings.TrimSpace(string(out)), "\n")

	var ours []string
	for _, name := range []string{"proto/process.proto", "proto/filesystem.proto"} {
		pf := parseProto(t, name)
		for msg, fields := range pf.messages {
			for _, f := range fields {
				typ := f.typ
				if strings.HasPrefix(typ, "map<") {
					typ = strings.ReplaceAll(typ, " ", "")
				} else {
					typ = typ[strings.LastIndex(typ, ".")+1:]
				}
				line := fmt.Sprintf("field %s %s %d %s", msg, f.name, f.number, typ)
				if f.repeated {
					line += " repeated"
				}
				ours = append(ours, line)
			}
		}
		for enum, values := range pf.enums {
			for v, n := range values {
				ours = append(ours, fmt.Sprintf("enum %s %s %d", enum, v, n))
			}
		}
		ours = append(ours, pf.rpcs...)
	}
	slices.Sort(sdk)
	slices.Sort(ours)
	if d := cmp.Diff(sdk, ours); d != "" {
		t.Errorf("proto/ against the SDK's descriptors (-sdk +ours):\n%s", d)
	}
}
