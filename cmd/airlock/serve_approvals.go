package main

import (
	"context"
	"errors"

	"github.com/airlockhq/airlock/internal/approvals"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/store"
)

// askThrough returns a copy of eg whose proxy asks the daemon's approvals
// service, which is made after the proxy (it records through the sandbox
// service that owns the proxy): until then, and on a daemon without one,
// an ask fails and the held connection is refused.
func (d *daemon) askThrough(eg *egress.Config) *egress.Config {
	if eg == nil {
		return nil
	}
	c := *eg
	c.Ask = func(ctx context.Context, q egress.AskRequest) (egress.AskAnswer, error) {
		a := d.approvals.Load()
		if a == nil {
			return egress.AskAnswer{}, errNoApprovals
		}
		return a.AskEgress(ctx, q)
	}
	return &c
}

var errNoApprovals = errors.New("the approvals service is not running yet")

// newApprovals is the approvals service over the daemon's store and
// sandbox service: approval events go to the sandbox's audit log (and
// so to the tenant's stream and webhooks), and a decision remembered for
// the sandbox goes into its network policy.
func newApprovals(st store.Store, mgr *sandbox.Service) *approvals.Service {
	return approvals.New(approvals.Options{
		Store: st,
		TaskOf: func(ctx context.Context, tenantID, id string) string {
			rec, err := st.GetSandbox(ctx, id)
			if err != nil || rec.TenantID != tenantID {
				return ""
			}
			return rec.Metadata["airlock.task"]
		},
		Record: func(ctx context.Context, a approvals.Approval, typ, keyID string) {
			mgr.RecordApproval(ctx, sandbox.Caller{TenantID: a.TenantID, KeyID: keyID}, a.SandboxID, typ, a)
		},
		Remember: func(ctx context.Context, a approvals.Approval, keyID string) error {
			if a.Egress == nil {
				return nil
			}
			return mgr.RememberTarget(ctx, sandbox.Caller{TenantID: a.TenantID, KeyID: keyID}, a.SandboxID,
				a.Egress.Host, a.Egress.Port, a.State == approvals.Allowed)
		},
	})
}
