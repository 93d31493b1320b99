package main

import (
	"strings"
	"testing"
)

// TestSkipsAreListedAndFailCI runs the real go test on testdata/skipper:
// a passing package's skips were invisible in `go test ./...`; now every
// one is listed with its reason, and in CI a skip for a missing tool fails
// the run while one the host cannot help does not.
func TestSkipsAreListedAndFailCI(t *testing.T) {
	for _, tc := range []struct {
		ci       string
		code     int
		contains []string
	}{
		{"", 0, []string{
			"ok  \tgithub.com/airlockhq/airlock/internal/testenv/gotest/testdata/skipper",
			"2 tests skipped:",
			"TestHostLacks: skipper_test.go:13: unsupported here: no frobnicator in this kernel",
			"TestToolMissing: skipper_test.go:15: frobctl is not installed",
		}},
		{"true", 1, []string{
			"2 tests skipped:",
			"gotest: 1 test skipped in CI for a missing tool or privilege",
		}},
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			var out strings.Builder
			code := run([]string{"-count=1", "./testdata/skipper"}, &out)
			if code != tc.code {
				t.Errorf("exit %d, want %d; output:\n%s", code, tc.code, out.String())
			}
			for _, want := range tc.contains {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
			if strings.Contains(out.String(), "=== RUN") {
				t.Errorf("a passing package's test output was printed:\n%s", out.String())
			}
		})
	}
}

// TestFailingPackageShowsItsOutput: a failing package prints its failed
// tests' output and its own lines, as go test without -v does.
func TestFailingPackageShowsItsOutput(t *testing.T) {
	var out strings.Builder
	rep := newReport(&out, false)
	for _, l := range []string{
		`{"Action":"start","Package":"p"}`,
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: passing noise\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: boom\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"--- FAIL: TestA (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}`,
		`{"Action":"fail","Package":"p"}`,
		`{"Action":"output","Package":"q","Output":"ok  \tq\t0.01s\n"}`,
		`{"Action":"pass","Package":"q"}`,
		`not json`,
	} {
		rep.line([]byte(l))
	}
	want := "    a_test.go:3: boom\n--- FAIL: TestA (0.00s)\nFAIL\tp\t0.01s\nok  \tq\t0.01s\nnot json\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestDefaultTimeout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-race", "./..."}, "-timeout 60m -race ./..."},
		{[]string{"-timeout", "5m", "./..."}, "-timeout 5m ./..."},
		{[]string{"-timeout=5m", "./..."}, "-timeout=5m ./..."},
		{[]string{"-count=1", "-test.timeout=1m", "./x"}, "-count=1 -test.timeout=1m ./x"},
	} {
		if got := strings.Join(withTimeout(tc.args), " "); got != tc.want {
			t.Errorf("withTimeout(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
