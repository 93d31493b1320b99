package mcp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// callState is what a 2026-07-28 tool call carries from one round to the
// next in requestState: the client holds it between an input_required
// result and its retry, so that any replica can serve the retry.
//
// The client sees it (it is signed, not encrypted) and could only replay
// it as it was: a state that does not verify, is stale, or was issued for
// other arguments or another key is refused. Even a forged one would let
// the caller do no more than its own key allows, since every action taken
// from it goes through the API with that key.
type callState struct {
	Tool   string `json:"tool"`
	Caller string `json:"caller,omitempty"` // the API key's digest, over HTTP
	Args   string `json:"args"`             // digest of the call's arguments
	Pid    int    `json:"pid,omitempty"`    // run_command: the process it started
	Task   string `json:"task,omitempty"`   // task_run: the task it created
	// Watching says the call noted what was pending when it began: Skip.
	Watching bool     `json:"watching,omitempty"`
	Skip     []string `json:"skip,omitempty"`   // approvals pending before the call began
	Seen     []string `json:"seen,omitempty"`   // approvals that opened during the call
	Asking   []string `json:"asking,omitempty"` // those asked about in the round just ended
	Expires  int64    `json:"exp"`              // unix seconds
}

// stateLife bounds how long a state is good for: no sandbox lives longer.
const stateLife = 24 * time.Hour

// sealer signs and checks call states with a key the client never sees.
type sealer struct{ key []byte }

func newSealer(key []byte) sealer {
	if len(key) == 0 {
		// One process, one client (stdio), or a single server: a retry
		// comes back here.
		key = make([]byte, 32)
		rand.Read(key)
	}
	// Its own key, whatever else the one given serves.
	m := hmac.New(sha256.New, key)
	m.Write([]byte("airlock mcp request state v1"))
	return sealer{key: m.Sum(nil)}
}

func (s sealer) mac(body []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(body)
	return m.Sum(nil)
}

func (s sealer) seal(st callState) (string, error) {
	body, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(body) + "." + enc.EncodeToString(s.mac(body)), nil
}

var errStateInvalid = errors.New("requestState was not issued by this server, or was changed")

// open checks token and returns its state.
func (s sealer) open(token string, now time.Time) (callState, error) {
	enc := base64.RawURLEncoding
	b64, sig64, ok := strings.Cut(token, ".")
	body, err1 := enc.DecodeString(b64)
	sig, err2 := enc.DecodeString(sig64)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(sig, s.mac(body)) {
		return callState{}, errStateInvalid
	}
	var st callState
	if err := json.Unmarshal(body, &st); err != nil {
		return callState{}, fmt.Errorf("requestState: %w", err)
	}
	if now.Unix() > st.Expires {
		return callState{}, errors.New("requestState has expired")
	}
	return st, nil
}

// digest is a short fingerprint of v's JSON, to tell a retry's arguments
// from another call's.
func digest(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
