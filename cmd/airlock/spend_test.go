package main

import (
	"encoding/json"
	"flag"
	"io"
	"testing"

	"github.com/airlockhq/airlock/client"
)

// TestSpendFlags: task run's budget and retry flags become the request's
// budget and retry, and a value the server would refuse is a usage error
// (status 2) before anything is sent.
func TestSpendFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the request's JSON; "" for a usage error
	}{
		{nil, `{"harness":"generic"}`},
		{[]string{"--budget-tokens", "5000"}, `{"harness":"generic","budget":{"max_tokens":5000}}`},
		{[]string{"--budget-usd", "0.25", "--budget-tokens", "9"}, `{"harness":"generic","budget":{"max_cost_usd":0.25,"max_tokens":9}}`},
		{[]string{"--retry", "3"}, `{"harness":"generic","retry":{"max":3}}`},
		{[]string{"--retry", "0"}, `{"harness":"generic"}`},
		{[]string{"--budget-usd", "0"}, ""},
		{[]string{"--budget-usd", "-1"}, ""},
		{[]string{"--budget-usd", "+Inf"}, ""},
		{[]string{"--budget-usd", "NaN"}, ""},
		{[]string{"--budget-tokens", "0"}, ""},
		{[]string{"--retry", "11"}, ""},
		{[]string{"--retry", "-1"}, ""},
	} {
		f := flag.NewFlagSet("task run", flag.ContinueOnError)
		f.SetOutput(io.Discard)
		s := addSpendFlags(f)
		if err := f.Parse(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		req := client.TaskRequest{Harness: "generic"}
		err := s.apply(f, &req)
		if tc.want == "" {
			if err != exitError(2) {
				t.Errorf("%q: %v, want a usage error", tc.args, err)
			}
			continue
		}
		b, _ := json.Marshal(req)
		if err != nil || string(b) != tc.want {
			t.Errorf("%q: %s, %v; want %s", tc.args, b, err, tc.want)
		}
	}
}

// TestSpendText: costs to the millionth of a dollar, a call whose usage
// was not read never shown as 0 tokens, and "-" where a server has no
// price table.
func TestSpendText(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	usd := 0.0045
	for _, tc := range []struct{ got, want string }{
		{usdText(0.0045), "$0.0045"},
		{usdText(1.23456789), "$1.234568"},
		{usdText(0), "$0"},
		{costCell(nil), "-"},
		{costCell(&client.Cost{Total: 2.5}), "$2.5"},
		{tokensCell(client.ModelTotals{}), "-"},
		{tokensCell(client.ModelTotals{Calls: 1, InputTokens: 10, CachedInputTokens: 5, OutputTokens: 7, ReasoningTokens: 3}), "22"},
		{callsCell(client.ModelTotals{Calls: 9, UnmeteredCalls: 1}), "9 (1 unmetered)"},
		{callLine(&client.ModelCall{Model: "gpt-test", Host: "api.openai.com", Status: 502}),
			"model call gpt-test (api.openai.com, status 502): usage unknown"},
		{callLine(&client.ModelCall{API: client.APIAnthropicMessages, Host: "api.anthropic.com", InputTokens: n(10),
			CachedInputTokens: n(0), OutputTokens: n(4), CostUSD: &usd}), "model call anthropic.messages: 10 in, 0 cached, 4 out tokens, $0.0045"},
		{callLine(&client.ModelCall{Host: "api.openai.com", Refused: "the budget is spent"}),
			"model call to api.openai.com refused: the budget is spent"},
		{spendLine(client.TaskUsage{}, nil), ""},
		{spendLine(client.TaskUsage{ModelTotals: client.ModelTotals{Calls: 2, InputTokens: 100, OutputTokens: 50, ReasoningTokens: 5}},
			&client.Cost{Total: 0.3, Model: 0.2, Compute: 0.1}),
			"2 model calls: 100 in, 0 cached, 50 out (5 reasoning) tokens; cost $0.3 (model $0.2, compute $0.1)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
