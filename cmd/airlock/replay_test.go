package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestReplayFetches checks which recording each form of the command
// asks for, by saving it, and that bad flags end with status 2 before
// any request.
func TestReplayFetches(t *testing.T) {
	const file = `{"version":2,"width":80,"height":24}` + "\n" + `[0,"o","hi"]` + "\n"
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RequestURI())
		w.Header().Set("Content-Type", "application/x-asciicast")
		io.WriteString(w, file)
	}))
	defer srv.Close()
	t.Setenv("AIRLOCK_URL", srv.URL)
	t.Setenv("AIRLOCK_API_KEY", "alk_test")
	out := filepath.Join(t.TempDir(), "x.cast")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", out, "sb_1", "ses-1"}, "/v1/sandboxes/sb_1/sessions/ses-1/cast"},
		{[]string{"sb_1", "--exec", "ex-1", "--out", out}, "/v1/sandboxes/sb_1/audit/cast?exec=ex-1"},
		{[]string{"--speed", "3", "--idle-limit", "1s", "--out", out, "sb_1"}, "/v1/sandboxes/sb_1/audit/cast"},
	} {
		asked = nil
		os.Remove(out)
		if err := replayCmd(tc.args); err != nil {
			t.Errorf("replay %q: %v", tc.args, err)
			continue
		}
		if len(asked) != 1 || asked[0] != tc.want {
			t.Errorf("replay %q asked for %q, want %s", tc.args, asked, tc.want)
		}
		if b, err := os.ReadFile(out); err != nil || string(b) != file {
			t.Errorf("replay %q saved %q, %v", tc.args, b, err)
		}
	}

	asked = nil
	for _, args := range [][]string{
		{},
		{"sb_1", "ses-1", "extra"},
		{"--exec", "ex-1", "sb_1", "ses-1"},
		{"--speed", "0", "sb_1"},
		{"--speed", "-2", "sb_1"},
		{"--speed", "fast", "sb_1"},
		{"--idle-limit", "-1s", "sb_1"},
		{"--idle-limit", "2", "sb_1"},
		{"--nope", "sb_1"},
	} {
		var code exitError
		if err := replayCmd(args); !errors.As(err, &code) || code != 2 {
			t.Errorf("replay %q: %v, want exit status 2", args, err)
		}
	}
	if len(asked) != 0 {
		t.Errorf("bad invocations made requests: %q", asked)
	}
}
