package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

// docBlock is a fenced block of docs/CLIENTS.md and the comment before it:
// "run: bash" or "run: go" (the test runs it), or "from: PATH" (a file,
// relative to the repository, that holds its lines in order).
type docBlock struct {
	mark  string
	line  int
	lines []string
}

// clientsDocBlocks reads docs/CLIENTS.md's marked blocks.
func clientsDocBlocks(t *testing.T) []docBlock {
	t.Helper()
	f, err := os.Open("../docs/CLIENTS.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []docBlock
	var mark string
	var cur *docBlock
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		case strings.HasPrefix(line, "<!-- ") && strings.HasSuffix(line, " -->"):
			mark = strings.TrimSuffix(strings.TrimPrefix(line, "<!-- "), " -->")
		case strings.HasPrefix(line, "```") && mark != "":
			cur = &docBlock{mark: mark, line: n}
			mark = ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// TestClientsDocFrom checks that every block of docs/CLIENTS.md taken from
// a test is still in it: its lines, trimmed, in order, in the file named.
func TestClientsDocFrom(t *testing.T) {
	blocks := clientsDocBlocks(t)
	var from int
	for _, b := range blocks {
		path, ok := strings.CutPrefix(b.mark, "from: ")
		if !ok {
			continue
		}
		from++
		data, err := os.ReadFile(filepath.Join("..", path))
		if err != nil {
			t.Errorf("CLIENTS.md:%d: %v", b.line, err)
			continue
		}
		src := strings.Split(string(data), "\n")
		i := 0
		for _, want := range b.lines {
			want = strings.TrimSpace(want)
			if want == "" {
				continue
			}
			for i < len(src) && strings.TrimSpace(src[i]) != want {
				i++
			}
			if i == len(src) {
				t.Errorf("CLIENTS.md:%d: %q is not in %s (after the block's earlier lines)", b.line, want, path)
				break
			}
			i++
		}
	}
	if from < 8 {
		t.Errorf("CLIENTS.md has %d blocks taken from tests; want every client's", from)
	}
}

// TestClientsDocRun runs CLIENTS.md's REST and Go blocks as they are
// against a real server, with AIRLOCK_URL and AIRLOCK_API_KEY set as the
// page says.
func TestClientsDocRun(t *testing.T) {
	s := startServer(t, "")
	env := append(os.Environ(), "AIRLOCK_URL="+s.url, "AIRLOCK_API_KEY="+s.adminKey)
	ran := map[string]bool{}
	for _, b := range clientsDocBlocks(t) {
		var cmd *exec.Cmd
		switch b.mark {
		case "run: bash":
			cmd = exec.Command("bash", "-euo", "pipefail", "-c", strings.Join(b.lines, "\n"))
		case "run: go":
			dir, err := os.MkdirTemp("testdata", "clientsdoc-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(strings.Join(b.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd = exec.Command("go", "run", "./"+dir)
		default:
			continue
		}
		ran[b.mark] = true
		cmd.Env = env
		timer := time.AfterFunc(3*time.Minute, func() {
			if cmd.Process != nil {
				cmd.Process.Kill()
			}
		})
		out, err := cmd.CombinedOutput()
		timer.Stop()
		if err != nil || !strings.Contains(string(out), "hello") {
			t.Errorf("CLIENTS.md:%d (%s): %v\n%s", b.line, b.mark, err, out)
		}
	}
	for _, m := range []string{"run: bash", "run: go"} {
		if !ran[m] {
			t.Errorf("CLIENTS.md has no %q block", m)
		}
	}
	if page := must[client.Page](t)(s.admin().ListSandboxes(ctx, client.ListOptions{State: "running"})); len(page.Sandboxes) != 0 {
		t.Errorf("%d sandboxes left running after the blocks", len(page.Sandboxes))
	}
}
