package main

import (
	"strings"
	"testing"

	"github.com/airlockhq/airlock/client"
)

// TestAsksCell: `airlock approvals ls` says what each kind asks, on one
// line of a table.
func TestAsksCell(t *testing.T) {
	for _, tc := range []struct {
		a    client.Approval
		want string
	}{
		{client.Approval{Egress: &client.ApprovalEgress{Host: "denied.test", Port: 80, Protocol: "http"}}, "http denied.test:80"},
		{client.Approval{Egress: &client.ApprovalEgress{Host: "::1", Port: 443, Protocol: "connect"}}, "connect [::1]:443"},
		{client.Approval{Command: &client.ApprovalCommand{Text: "deploy\n  to prod"}}, "deploy to prod"},
		{client.Approval{Command: &client.ApprovalCommand{Text: strings.Repeat("word ", 20)}}, ""},
		{client.Approval{Harness: &client.ApprovalHarness{Harness: "claude", Tool: "Bash"}}, "claude Bash"},
		{client.Approval{}, "-"},
	} {
		got := asks(tc.a)
		if tc.want == "" {
			if r := []rune(got); len(r) != 48 || r[47] != '…' {
				t.Errorf("a long command: %q, want it cut to 48 runes", got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("asks(%+v) = %q, want %q", tc.a, got, tc.want)
		}
	}
}
