package console

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
)

// webDir is the console's sources, beside this package in the repository.
var webDir = filepath.Join("..", "..", "web")

// node finds node, or skips t (fails it in CI, which installs node).
func node(t *testing.T) string {
	t.Helper()
	n, err := exec.LookPath("node")
	if err != nil {
		testenv.Lacking(t, "the console's JavaScript unit tests need node (apt-get install nodejs)")
	}
	return n
}

// TestConsoleUnitTests runs web/test/*.test.mjs with node's test runner:
// the pure functions behind the console's pages (durations, the network
// log's outcome of an event).
func TestConsoleUnitTests(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(webDir, "test", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no console unit tests in %s: %v", webDir, err)
	}
	cmd := exec.Command(node(t), append([]string{"--test"}, files...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
}

// TestConsoleDurationsParseAsGoDoes pins that the console's duration fields
// (the create form's timeout) read exactly what airlock create --timeout
// reads: web/src/duration.js against time.ParseDuration, on the edge cases
// and on a few thousand random strings of duration characters.
func TestConsoleDurationsParseAsGoDoes(t *testing.T) {
	inputs := []string{"", "0", "-0", "+0", "00", "0s", "90s", "10m", "1h30m", "1.5h", ".5s", "5.s", ".s", "-.s",
		"900", "5d", "1h 30m", " 1h", "1H", "300ms", "1us", "1µs", "1μs", "1ns", "2h45m30.5s", "1e3s", "1h-30m", "s",
		"-", "+", ".", "1..5s", "1.2.3s", "-5m", "+5m", "24h", "24h0m1s", "48h",
		"9223372036854775807ns", "9223372036854775808ns", "-9223372036854775808ns", "-9223372036854775809ns",
		"2562047h47m16.854775807s", "2562047h47m16.854775808s", "2562048h", "0.000000001s", "0.0000000001s",
		"1.00000000000000000000000000001s", "0.3333333333333333333333h", "18446744073709551616s", "99999999999999999999ns"}
	r := rand.New(rand.NewPCG(18, 15))
	const alphabet = "0123456789..hmsunµμ+- "
	chars := []rune(alphabet)
	for range 3000 {
		b := make([]rune, 1+r.IntN(9))
		for i := range b {
			b[i] = chars[r.IntN(len(chars))]
		}
		inputs = append(inputs, string(b))
	}
	in, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node(t), filepath.Join(webDir, "test", "duration-cli.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duration-cli.mjs: %v", err)
	}
	var got []struct {
		NS  *string `json:"ns"`
		Err string  `json:"err"`
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(inputs) {
		t.Fatalf("duration-cli.mjs answered %d results for %d inputs: %v", len(got), len(inputs), err)
	}
	bad := 0
	for i, s := range inputs {
		d, goErr := time.ParseDuration(s)
		switch js := got[i]; {
		case goErr != nil && js.NS != nil:
			t.Errorf("%q: Go refuses it (%v), the console reads %s ns", s, goErr, *js.NS)
		case goErr == nil && js.NS == nil:
			t.Errorf("%q: Go reads %v, the console refuses it: %s", s, d, js.Err)
		case goErr == nil && *js.NS != strconv.FormatInt(int64(d), 10):
			t.Errorf("%q: Go reads %d ns, the console %s ns", s, int64(d), *js.NS)
		default:
			continue
		}
		if bad++; bad > 20 {
			t.Fatal("too many differences")
		}
	}
}
