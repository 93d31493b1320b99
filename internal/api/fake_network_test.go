package api

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// The fake keeps each sandbox's policy in its record, like the service,
// and a log per sandbox that tests fill in.

func (m *fakeManager) GetNetwork(_ context.Context, c sandbox.Caller, id string) (egress.Policy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sb, err := m.lookup(c, id)
	if err != nil {
		return egress.Policy{}, err
	}
	p := egress.Policy{Mode: egress.ModeNone}
	if sb.Network != "" {
		err = json.Unmarshal([]byte(sb.Network), &p)
	}
	return p, err
}

func (m *fakeManager) SetNetwork(_ context.Context, c sandbox.Caller, id string, p egress.Policy) (egress.Policy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sb, err := m.lookup(c, id)
	if err != nil {
		return egress.Policy{}, err
	}
	rules, err := egress.Compile(p)
	if err != nil {
		return egress.Policy{}, fmt.Errorf("%w: network: %v", sandbox.ErrInvalid, err)
	}
	b, _ := json.Marshal(rules.Policy())
	sb.Network = string(b)
	m.sandboxes[id] = sb
	return rules.Policy(), nil
}

func (m *fakeManager) NetworkLog(_ context.Context, c sandbox.Caller, id string, after int64, limit int) ([]egress.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.lookup(c, id); err != nil {
		return nil, err
	}
	out := []egress.Event{}
	for _, e := range m.netlog[id] {
		if e.Seq > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}
