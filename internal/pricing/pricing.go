// Package pricing turns usage into money: an operator's price table for
// model tokens (per model, per million tokens) and for compute (CPU
// seconds, GiB-seconds of memory, GiB of egress). Airlock never guesses a
// price: a model the table does not name costs nothing and is counted as
// unpriced, so a missing line shows instead of hiding in a total.
package pricing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

// Table is `airlock serve --prices FILE`:
//
//	{
//	  "models": {
//	    "gpt-5":       {"input": 1.25, "cached_input": 0.125, "output": 10},
//	    "claude-sonnet-4-5*": {"input": 3, "cached_input": 0.3, "output": 15},
//	    "*":           {"input": 1, "output": 4}
//	  },
//	  "compute": {"cpu_second": 0.00002, "memory_gib_second": 0.000003, "egress_gib": 0.05}
//	}
//
// Model prices are USD per million tokens; a name ending in "*" matches
// every model it prefixes, the longest prefix winning over shorter ones
// and an exact name over any prefix. Reasoning tokens are output tokens
// and cost as output. A model line without cached_input prices cached
// tokens as input.
type Table struct {
	Models  map[string]ModelPrice `json:"models,omitempty"`
	Compute ComputePrice          `json:"compute,omitzero"`
}

// ModelPrice is USD per million tokens.
type ModelPrice struct {
	Input       float64  `json:"input"`
	CachedInput *float64 `json:"cached_input,omitempty"`
	Output      float64  `json:"output"`
}

// ComputePrice is USD per CPU-second, per GiB-second of memory (the
// sandbox's memory limit for as long as it exists) and per GiB the
// sandbox sent out through the egress proxy.
type ComputePrice struct {
	CPUSecond       float64 `json:"cpu_second,omitempty"`
	MemoryGiBSecond float64 `json:"memory_gib_second,omitempty"`
	EgressGiB       float64 `json:"egress_gib,omitempty"`
}

// Load reads and checks a price table file.
func Load(path string) (*Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("prices %s: %w", path, err)
	}
	return t, nil
}

// Parse reads a price table: unknown fields, negative or non-finite
// prices and a "*" anywhere but at the end of a name are refused, each
// error naming its field.
func Parse(b []byte) (*Table, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t Table
	if err := dec.Decode(&t); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	check := func(field string, v float64) error {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: %v is not a price (want a number >= 0)", field, v)
		}
		return nil
	}
	names := make([]string, 0, len(t.Models))
	for name := range t.Models {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := t.Models[name]
		if name == "" || strings.Contains(strings.TrimSuffix(name, "*"), "*") {
			return nil, fmt.Errorf("models: %q: a model name, or a prefix ending in *", name)
		}
		f := "models." + name
		if err := errors.Join(check(f+".input", p.Input), check(f+".output", p.Output)); err != nil {
			return nil, err
		}
		if p.CachedInput != nil {
			if err := check(f+".cached_input", *p.CachedInput); err != nil {
				return nil, err
			}
		}
	}
	c := t.Compute
	if err := errors.Join(check("compute.cpu_second", c.CPUSecond),
		check("compute.memory_gib_second", c.MemoryGiBSecond), check("compute.egress_gib", c.EgressGiB)); err != nil {
		return nil, err
	}
	return &t, nil
}

// Tokens is one model call's usage, as the egress proxy read it.
type Tokens struct {
	Input, CachedInput, Output int64
}

// Model prices a model's tokens: its cost and whether the table prices
// that model at all (a nil table prices nothing).
func (t *Table) Model(model string, u Tokens) (usd float64, priced bool) {
	if t == nil {
		return 0, false
	}
	p, ok := t.lookup(model)
	if !ok {
		return 0, false
	}
	cached := p.Input
	if p.CachedInput != nil {
		cached = *p.CachedInput
	}
	return (float64(u.Input)*p.Input + float64(u.CachedInput)*cached + float64(u.Output)*p.Output) / 1e6, true
}

// lookup finds model's line: its exact name, else the longest matching
// prefix.
func (t *Table) lookup(model string) (ModelPrice, bool) {
	if p, ok := t.Models[model]; ok {
		return p, true
	}
	best, found := -1, ModelPrice{}
	for name, p := range t.Models {
		prefix, ok := strings.CutSuffix(name, "*")
		if ok && strings.HasPrefix(model, prefix) && len(prefix) > best {
			best, found = len(prefix), p
		}
	}
	return found, best >= 0
}

// Resources is what a sandbox used that compute prices apply to.
type Resources struct {
	CPUSeconds       float64
	MemoryGiBSeconds float64
	EgressBytes      int64
}

// ComputeCost prices c (0 with a nil table).
func (t *Table) ComputeCost(c Resources) float64 {
	if t == nil {
		return 0
	}
	p := t.Compute
	return c.CPUSeconds*p.CPUSecond + c.MemoryGiBSeconds*p.MemoryGiBSecond + float64(c.EgressBytes)/(1<<30)*p.EgressGiB
}
