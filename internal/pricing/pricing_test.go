package pricing

import (
	"math"
	"strings"
	"testing"
)

func TestParseRefusesBadTables(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"models": {"gpt-5": {"input": -1, "output": 1}}}`, "models.gpt-5.input"},
		{`{"models": {"gpt-5": {"input": 1, "output": 1, "cached_input": -0.5}}}`, "models.gpt-5.cached_input"},
		{`{"models": {"gp*t": {"input": 1, "output": 1}}}`, `"gp*t"`},
		{`{"models": {"": {"input": 1, "output": 1}}}`, `""`},
		{`{"model": {}}`, `unknown field "model"`},
		{`{"compute": {"cpu_second": -1}}`, "compute.cpu_second"},
		{`{"compute": {"gpu_second": 1}}`, `unknown field "gpu_second"`},
		{`{} {}`, "more than one"},
	} {
		if _, err := Parse([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want an error naming %s", tc.json, err, tc.want)
		}
	}
}

func TestModelPrices(t *testing.T) {
	tab, err := Parse([]byte(`{"models": {
		"gpt-5": {"input": 1.25, "cached_input": 0.125, "output": 10},
		"gpt-5*": {"input": 2, "output": 20},
		"gpt-5-mini*": {"input": 0.25, "output": 2},
		"*": {"input": 1, "output": 1}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	u := Tokens{Input: 1000, CachedInput: 4000, Output: 500}
	for _, tc := range []struct {
		model string
		want  float64
	}{
		{"gpt-5", (1000*1.25 + 4000*0.125 + 500*10) / 1e6},         // exact beats prefix
		{"gpt-5-codex", (1000*2 + 4000*2 + 500*20) / 1e6},          // cached priced as input
		{"gpt-5-mini-2025", (1000*0.25 + 4000*0.25 + 500*2) / 1e6}, // longest prefix
		{"llama", (1000 + 4000 + 500) / 1e6},
	} {
		got, ok := tab.Model(tc.model, u)
		if !ok || math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("Model(%s) = %v, %v; want %v", tc.model, got, ok, tc.want)
		}
	}
	none, _ := Parse([]byte(`{"models": {"gpt-5": {"input": 1, "output": 1}}}`))
	if usd, ok := none.Model("claude", u); ok || usd != 0 {
		t.Errorf("an unpriced model: %v, %v", usd, ok)
	}
	var nilTable *Table
	if usd, ok := nilTable.Model("gpt-5", u); ok || usd != 0 || nilTable.ComputeCost(Resources{CPUSeconds: 5}) != 0 {
		t.Error("a nil table priced something")
	}
}

func TestComputeCost(t *testing.T) {
	tab, err := Parse([]byte(`{"compute": {"cpu_second": 0.5, "memory_gib_second": 0.25, "egress_gib": 2}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := tab.ComputeCost(Resources{CPUSeconds: 3, MemoryGiBSeconds: 8, EgressBytes: 3 << 29})
	if want := 3*0.5 + 8*0.25 + 1.5*2; math.Abs(got-want) > 1e-12 {
		t.Errorf("ComputeCost = %v, want %v", got, want)
	}
}
