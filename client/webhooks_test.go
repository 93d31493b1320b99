package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/airlockhq/airlock/client"
)

func TestVerifyWebhook(t *testing.T) {
	// printf '1700000000.{"id":1}' | openssl dgst -sha256 -hmac secret-0123456789
	const good = "t=1700000000,v1=7c70d5cab1f3b57b80d1d9fda0ea89cd4a2d18774750537ae69a342338f29ce0"
	body := []byte(`{"id":1}`)
	at := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name, secret, header string
		body                 []byte
		now                  time.Time
		ok                   bool
	}{
		{"valid", "secret-0123456789", good, body, at.Add(time.Minute), true},
		{"valid among others", "secret-0123456789", "v1=00," + good + ",v0=x", body, at, true},
		{"other secret", "secret-9876543210", good, body, at, false},
		{"changed body", "secret-0123456789", good, []byte(`{"id":2}`), at, false},
		{"replayed later", "secret-0123456789", good, body, at.Add(6 * time.Minute), false},
		{"from the future", "secret-0123456789", good, body, at.Add(-6 * time.Minute), false},
		{"time changed", "secret-0123456789", "t=1700000001,v1=7c70d5cab1f3b57b80d1d9fda0ea89cd4a2d18774750537ae69a342338f29ce0", body, at, false},
		{"no time", "secret-0123456789", "v1=7c70d5cab1f3b57b80d1d9fda0ea89cd4a2d18774750537ae69a342338f29ce0", body, at, false},
		{"no v1", "secret-0123456789", "t=1700000000", body, at, false},
		{"garbage", "secret-0123456789", "t=x,v1=zz", body, at, false},
	} {
		err := client.VerifyWebhook(tc.secret, tc.header, tc.body, 0, tc.now)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, client.ErrBadSignature)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// FuzzVerifyWebhook: no header the fuzzer makes up passes for a signature,
// and none makes the parser panic.
func FuzzVerifyWebhook(f *testing.F) {
	f.Add("t=1700000000,v1=00ff", []byte("{}"))
	f.Add("t=,v1=", []byte(""))
	f.Add(",,,=,t=1,t=2,v1=zz", []byte("x"))
	f.Add("t=1700000000,v1=7c70d5cab1f3b57b80d1d9fda0ea89cd4a2d18774750537ae69a342338f29ce0", []byte(`{"id":2}`))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		if err := client.VerifyWebhook("secret-0123456789", header, body, time.Hour, time.Unix(1700000000, 0)); err == nil {
			t.Fatalf("%q verified over %q", header, body)
		}
	})
}
