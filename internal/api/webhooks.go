package api

import (
	"net/http"
	"strconv"

	"github.com/airlockhq/airlock/internal/events"
)

func (s *server) createWebhook(w http.ResponseWriter, r *http.Request) {
	if s.events == nil {
		s.fail(w, r, errNoEvents)
		return
	}
	var req events.WebhookRequest
	if err := readJSON(w, r, s.maxJSON, &req, false); err != nil {
		s.fail(w, r, err)
		return
	}
	hook, err := s.events.CreateWebhook(r.Context(), callerOf(r).TenantID, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, hook)
}

func (s *server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	if s.events == nil {
		s.fail(w, r, errNoEvents)
		return
	}
	list, err := s.events.ListWebhooks(r.Context(), callerOf(r).TenantID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Webhooks []events.Webhook `json:"webhooks"`
	}{list})
}

func (s *server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	if s.events == nil {
		s.fail(w, r, errNoEvents)
		return
	}
	if err := s.events.DeleteWebhook(r.Context(), callerOf(r).TenantID, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// webhookDeliveries lists a webhook's deliveries, newest first, with every
// attempt: ?limit= (1-1000, default 100) and ?before= (an event id, for
// the next page).
func (s *server) webhookDeliveries(w http.ResponseWriter, r *http.Request) {
	if s.events == nil {
		s.fail(w, r, errNoEvents)
		return
	}
	if err := checkQuery(r, []string{"limit", "before"}); err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			s.fail(w, r, invalidf("query parameter limit=%q: want 1 to 1000", v))
			return
		}
		limit = n
	}
	var before int64
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			s.fail(w, r, invalidf("query parameter before=%q: want an event id (1 or more)", v))
			return
		}
		before = n
	}
	list, err := s.events.Deliveries(r.Context(), callerOf(r).TenantID, r.PathValue("id"), before, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Deliveries []events.Delivery `json:"deliveries"`
	}{list})
}
