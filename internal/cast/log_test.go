package cast

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/airlockhq/airlock/internal/audit"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// logOf builds an audit log as the sandbox service records one.
type logOf struct {
	t      *testing.T
	events []audit.Event
}

// add appends an event at ms milliseconds after t0.
func (l *logOf) add(ms float64, typ string, data map[string]any) *logOf {
	l.t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		l.t.Fatal(err)
	}
	e := audit.Event{Time: t0.Add(time.Duration(ms * float64(time.Millisecond))), Sandbox: "sb_1", Tenant: "ten_a", Actor: "key_a", Type: typ, Data: b}
	var prev *audit.Event
	if n := len(l.events); n > 0 {
		prev = &l.events[n-1]
	}
	if err := audit.Link(prev, &e); err != nil {
		l.t.Fatal(err)
	}
	l.events = append(l.events, e)
	return l
}

// piece returns an output or input event's data fields for p, encoded
// the way the recorder does.
func piece(p string, kv ...any) map[string]any {
	m := map[string]any{"bytes": len(p)}
	if utf8.ValidString(p) {
		m["data"] = p
	} else {
		m["data"], m["encoding"] = base64.StdEncoding.EncodeToString([]byte(p)), "base64"
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func kv(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// ev is a cast event at ms milliseconds.
func ev(ms float64, code, data string) Event {
	return Event{Time: time.Duration(ms * float64(time.Millisecond)), Code: code, Data: data}
}
