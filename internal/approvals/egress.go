package approvals

import (
	"context"
	"fmt"

	"github.com/airlockhq/airlock/internal/egress"
)

// AskEgress is the egress proxy's Config.Ask: it opens an approval for
// the held connection and answers with its decision. A timeout answers
// ctx's error, which the proxy reports as a timed-out ask.
func (s *Service) AskEgress(ctx context.Context, q egress.AskRequest) (egress.AskAnswer, error) {
	w, err := s.Open(ctx, Request{TenantID: q.TenantID, SandboxID: q.SandboxID, Deadline: q.Deadline,
		Egress: &Egress{Host: q.Host, Port: q.Port, Protocol: q.Protocol, Rule: q.Rule}})
	if err != nil {
		return egress.AskAnswer{}, err
	}
	a, err := w.Wait(ctx)
	if err != nil {
		return egress.AskAnswer{}, err
	}
	reason := fmt.Sprintf("%s by %s", a.ID, a.DecidedBy)
	if a.Reason != "" {
		reason += ": " + a.Reason
	}
	switch a.State {
	case Allowed:
		return egress.AskAnswer{Allow: true, Reason: reason}, nil
	case Denied:
		return egress.AskAnswer{Reason: reason}, nil
	}
	if ctx.Err() != nil {
		return egress.AskAnswer{}, ctx.Err()
	}
	return egress.AskAnswer{}, fmt.Errorf("approval %s %s: %s", a.ID, a.State, a.Reason)
}
