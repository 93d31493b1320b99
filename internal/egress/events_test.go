package egress

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEventLog(t *testing.T) {
	tests := []struct {
		name       string
		size, adds int
		after      int64
		limit      int
		want       []int64 // seqs returned
	}{
		{"empty", 3, 0, 0, 0, []int64{}},
		{"not full", 3, 2, 0, 0, []int64{1, 2}},
		{"full", 3, 3, 0, 0, []int64{1, 2, 3}},
		{"wrapped drops the oldest", 3, 5, 0, 0, []int64{3, 4, 5}},
		{"wrapped twice", 3, 7, 0, 0, []int64{5, 6, 7}},
		{"after", 3, 5, 3, 0, []int64{4, 5}},
		{"after a dropped seq", 3, 5, 1, 0, []int64{3, 4, 5}},
		{"after the newest", 3, 5, 5, 0, []int64{}},
		{"limit keeps the oldest", 3, 5, 0, 2, []int64{3, 4}},
		{"after and limit", 4, 9, 6, 2, []int64{7, 8}},
		{"limit above what is kept", 3, 5, 0, 10, []int64{3, 4, 5}},
		{"size one", 1, 4, 0, 0, []int64{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newEventLog(tt.size)
			for i := range tt.adds {
				e := l.add(Event{Host: fmt.Sprint(i + 1)})
				if e.Seq != int64(i+1) {
					t.Fatalf("add #%d got seq %d", i+1, e.Seq)
				}
			}
			got := []int64{}
			for _, e := range l.since(tt.after, tt.limit) {
				if e.Host != fmt.Sprint(e.Seq) {
					t.Errorf("event %d holds the event added as #%s", e.Seq, e.Host)
				}
				got = append(got, e.Seq)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("since(%d, %d) seqs (-want +got):\n%s", tt.after, tt.limit, diff)
			}
		})
	}
}

// TestOnEvent: the audit hook sees every event, stamped as the log keeps
// it, and Sandbox.Log pages through the same events.
func TestOnEvent(t *testing.T) {
	audit := make(chan Event, 16)
	tp := startProxy(t, Config{LogSize: 2, OnEvent: func(e Event) { audit <- e }}, allowlist("pypi.org"))
	for i := range 3 {
		resp, _ := tp.dial(t, tp.httpAddr).do(t, get(fmt.Sprintf("host%d.example", i)))
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("request %d: %s, want 403", i, resp.Status)
		}
	}
	var heard []Event
	for range 3 {
		heard = append(heard, <-audit)
	}
	for i, e := range heard {
		if e.Seq != int64(i+1) || e.SandboxID != "sb1" || e.TenantID != "tenant1" || e.Time.IsZero() {
			t.Errorf("audit event %d not stamped: %+v", i, e)
		}
	}
	// LogSize 2 keeps the last two.
	if diff := cmp.Diff(heard[1:], tp.sb.Log(0, 0)); diff != "" {
		t.Errorf("Log(0, 0) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(heard[2:], tp.sb.Log(2, 5)); diff != "" {
		t.Errorf("Log(2, 5) (-want +got):\n%s", diff)
	}
}
