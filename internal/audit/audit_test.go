package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func chain(t *testing.T, n int) []Event {
	t.Helper()
	var out []Event
	var prev *Event
	for i := range n {
		e := Event{Time: time.Date(2026, 12, 1, 0, 0, i, 123456789, time.UTC), Sandbox: "sb-1", Tenant: "ten-1",
			Actor: "key-1", Type: ExecStarted, Data: json.RawMessage(fmt.Sprintf(`{ "argv": ["echo", "%d"] }`, i))}
		if err := Link(prev, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		prev = &out[len(out)-1]
	}
	return out
}

func TestVerify(t *testing.T) {
	good := chain(t, 5)
	if r := Verify(good); !r.OK || r.Events != 5 {
		t.Fatalf("good chain: %+v", r)
	}
	// Survives a JSON round trip, as through storage or an export.
	b, _ := json.Marshal(good)
	var back []Event
	json.Unmarshal(b, &back)
	if r := Verify(back); !r.OK {
		t.Fatalf("after JSON: %+v", r)
	}
	cases := map[string]struct {
		edit func([]Event) []Event
		bad  int64
	}{
		"data changed":   {func(e []Event) []Event { e[2].Data = json.RawMessage(`{"argv":["echo","X"]}`); return e }, 3},
		"actor changed":  {func(e []Event) []Event { e[1].Actor = "key-2"; return e }, 2},
		"time changed":   {func(e []Event) []Event { e[3].Time = e[3].Time.Add(time.Microsecond); return e }, 4},
		"deleted":        {func(e []Event) []Event { return append(e[:1:1], e[2:]...) }, 2},
		"reordered":      {func(e []Event) []Event { e[2], e[3] = e[3], e[2]; return e }, 3},
		"first deleted":  {func(e []Event) []Event { return e[1:] }, 1},
		"hash rewritten": {func(e []Event) []Event { e[4].Data = json.RawMessage(`{}`); e[4].Hash, _ = Sum(e[4]); return e[:5] }, 0},
	}
	for name, tc := range cases {
		evs := tc.edit(append([]Event(nil), good...))
		r := Verify(evs)
		if tc.bad == 0 {
			// Rewriting the last event and its hash keeps the chain valid:
			// the stored head catches it.
			var v Verifier
			for _, e := range evs {
				v.Add(e)
			}
			v.Head(good[4].Seq, good[4].Hash)
			if r := v.Result(); r.OK || r.FirstBadSeq != 5 {
				t.Errorf("%s: with the head: %+v", name, r)
			}
			continue
		}
		if r.OK || r.FirstBadSeq != tc.bad {
			t.Errorf("%s: %+v, want first bad %d", name, r, tc.bad)
		}
	}
	// Cut short at the end: only the head shows it.
	var v Verifier
	for _, e := range good[:3] {
		v.Add(e)
	}
	v.Head(5, good[4].Hash)
	if r := v.Result(); r.OK || r.FirstBadSeq != 4 {
		t.Errorf("cut short: %+v", r)
	}
}

func TestScrubStream(t *testing.T) {
	sc := NewScrubber(map[string]string{"TOKEN": "sk-live-123456", "short": "ab"})
	in := "before sk-live-123456 middle sk-live-12 sk-live-123456 ab end"
	want := "before [secret:TOKEN] middle sk-live-12 [secret:TOKEN] ab end"
	if got := sc.String(in); got != want {
		t.Fatalf("String: %q", got)
	}
	for i := 0; i <= len(in); i++ {
		for j := i; j <= len(in); j++ {
			st := sc.Stream()
			var out []byte
			out = append(out, st.Write([]byte(in[:i]))...)
			out = append(out, st.Write([]byte(in[i:j]))...)
			out = append(out, st.Write([]byte(in[j:]))...)
			out = append(out, st.Flush()...)
			if string(out) != want {
				t.Fatalf("split at %d,%d: %q", i, j, out)
			}
			if strings.Contains(string(out), "sk-live-123456") {
				t.Fatal("secret leaked")
			}
		}
	}
}

func TestScrubMerge(t *testing.T) {
	old := NewScrubber(map[string]string{"TOKEN": "old-value-1234"})
	cur := NewScrubber(map[string]string{"TOKEN": "new-value-5678", "OTHER": "other-value"})
	m := cur.Merge(old).Merge(nil)
	got := m.String("old-value-1234 new-value-5678 other-value")
	if got != "[secret:TOKEN] [secret:TOKEN] [secret:OTHER]" {
		t.Errorf("merged: %q", got)
	}
	if m := (*Scrubber)(nil).Merge(old); m.String("old-value-1234") != "[secret:TOKEN]" {
		t.Error("nil merged with old")
	}
	if m := cur.Merge(cur); len(m.values) != 2 {
		t.Errorf("merge with itself: %d values", len(m.values))
	}
}
