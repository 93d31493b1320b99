package api

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// FuzzDecodeBody feeds the create and exec body decoder arbitrary bytes. It
// must never panic, must refuse with an invalid_argument apiError, and what
// it accepts must survive a round trip through encoding/json unchanged (so
// nothing was silently dropped or half-read).
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"cmd":["ls","-l"],"env":{"A":"1"},"timeout_s":3}`, `{"command":"echo hi","stdin":"x"}`,
		`{"template":"base","cpus":1.5,"memory_mb":512,"metadata":{"k":"v"}}`, `{"cmd":`, `[]`, `null`,
		`{"cmd":["a"]} {}`, `{"cpu":1}`, `{"memory_mb":"1"}`, ` {"workdir":"\u00e9"} `, `{"cmd":[null]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(name string, v, again any) {
			err := decodeBody(body, v)
			if err != nil {
				var ae *apiError
				if !errors.As(err, &ae) || ae.status != 400 || ae.code != codeInvalid || ae.message == "" {
					t.Fatalf("%s: %q: error %#v is not a 400 invalid_argument", name, body, err)
				}
				return
			}
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%s: re-encode: %v", name, err)
			}
			if err := decodeBody(b, again); err != nil {
				t.Fatalf("%s: %q accepted but its re-encoding %s is refused: %v", name, body, b, err)
			}
			if d := cmp.Diff(v, again, cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("%s: round trip (-first +second):\n%s", name, d)
			}
		}
		check("create", &sandbox.CreateRequest{}, &sandbox.CreateRequest{})
		check("exec", &sandbox.ExecRequest{}, &sandbox.ExecRequest{})
	})
}
