package api

import (
	"net/http"

	"github.com/airlockhq/airlock/internal/approvals"
)

var errNoApprovals = errf(http.StatusServiceUnavailable, codeUnavailable, "this server has no approvals service")

func approvalCaller(r *http.Request) approvals.Caller {
	c := callerOf(r)
	return approvals.Caller{TenantID: c.TenantID, KeyID: c.KeyID}
}

// listApprovals lists the tenant's approvals, oldest first: ?state=
// pending, allowed, denied or timed_out (default all).
func (s *server) listApprovals(w http.ResponseWriter, r *http.Request) {
	if s.approvals == nil {
		s.fail(w, r, errNoApprovals)
		return
	}
	if err := checkQuery(r, []string{"state"}); err != nil {
		s.fail(w, r, err)
		return
	}
	state := r.URL.Query().Get("state")
	switch state {
	case "", approvals.Pending, approvals.Allowed, approvals.Denied, approvals.TimedOut:
	default:
		s.fail(w, r, invalidf("query parameter state=%q: want pending, allowed, denied or timed_out", state))
		return
	}
	list, err := s.approvals.List(r.Context(), approvalCaller(r), state)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Approvals []approvals.Approval `json:"approvals"`
	}{list})
}

func (s *server) getApproval(w http.ResponseWriter, r *http.Request) {
	if s.approvals == nil {
		s.fail(w, r, errNoApprovals)
		return
	}
	a, err := s.approvals.Get(r.Context(), approvalCaller(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// decisionRequest is the body of POST /v1/approvals/{id}/decision.
type decisionRequest struct {
	Decision string `json:"decision"`
	Remember string `json:"remember"`
	Reason   string `json:"reason"`
}

// maxReason bounds a decision's reason, which goes into the audit log.
const maxReason = 1000

func (s *server) decideApproval(w http.ResponseWriter, r *http.Request) {
	if s.approvals == nil {
		s.fail(w, r, errNoApprovals)
		return
	}
	var req decisionRequest
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Decision != "allow" && req.Decision != "deny" {
		s.fail(w, r, invalidf(`field "decision": want "allow" or "deny", not %.40q`, req.Decision))
		return
	}
	switch req.Remember {
	case "", approvals.RememberOnce, approvals.RememberSandbox, approvals.RememberTask:
	default:
		s.fail(w, r, invalidf(`field "remember": want "once", "sandbox" or "task", not %.40q`, req.Remember))
		return
	}
	if len(req.Reason) > maxReason {
		s.fail(w, r, invalidf(`field "reason": %d bytes; at most %d`, len(req.Reason), maxReason))
		return
	}
	a, err := s.approvals.Decide(r.Context(), approvalCaller(r), r.PathValue("id"),
		approvals.Decision{Allow: req.Decision == "allow", Remember: req.Remember, Reason: req.Reason})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}
