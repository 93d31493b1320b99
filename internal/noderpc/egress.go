package noderpc

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/airlockhq/airlock/internal/egresshost"
)

// The node's egress proxies (internal/egresshost): a node that runs them
// serves these routes; one that does not answers them as routes it lacks,
// and the control plane then proxies its sandboxes' traffic itself.

func (s *server) egressRoutes() {
	if s.egress == nil {
		return
	}
	s.handle("PUT "+prefix+"/sandboxes/{id}/egress", func(r *http.Request) (any, error) {
		var spec egresshost.Spec
		if err := decode(r, &spec); err != nil {
			return nil, err
		}
		return s.egress.Put(r.Context(), r.PathValue("id"), spec)
	})
	s.handle("GET "+prefix+"/egress/events", func(r *http.Request) (any, error) {
		after, err := queryInt(r, "after")
		if err != nil {
			return nil, err
		}
		asks, err := queryInt(r, "asks")
		if err != nil {
			return nil, err
		}
		wait, err := queryInt(r, "wait_ms")
		if err != nil {
			return nil, err
		}
		return s.egress.Events(r.Context(), after, asks, r.URL.Query().Get("boot"), time.Duration(wait)*time.Millisecond), nil
	})
	s.handle("POST "+prefix+"/egress/asks/{id}", func(r *http.Request) (any, error) {
		var a egresshost.Answer
		if err := decode(r, &a); err != nil {
			return nil, err
		}
		return nil, s.egress.Answer(r.PathValue("id"), a)
	})
}

// forgetEgress closes sandbox id's proxy before the sandbox goes.
func (s *server) forgetEgress(id string) {
	if s.egress != nil {
		s.egress.Delete(id)
	}
}

// PutEgress attaches the sandbox's proxy on its node with spec, or
// replaces what it serves with. A node that runs no proxies answers
// runtime.ErrUnsupported.
func (s *sandbox) PutEgress(ctx context.Context, spec egresshost.Spec) (egresshost.PutReply, error) {
	var r egresshost.PutReply
	err := s.rt.call(ctx, http.MethodPut, s.path("egress", nil), spec, &r)
	return r, err
}

// EgressEvents acknowledges the node's egress events up to after and
// returns those after it and the questions open, waiting up to wait for
// something new (egresshost.Host.Events).
func (c *Runtime) EgressEvents(ctx context.Context, after, askVersion int64, boot string, wait time.Duration) (egresshost.Batch, error) {
	var b egresshost.Batch
	q := url.Values{"after": {strconv.FormatInt(after, 10)}, "asks": {strconv.FormatInt(askVersion, 10)}, "boot": {boot},
		"wait_ms": {strconv.FormatInt(wait.Milliseconds(), 10)}}
	err := c.call(ctx, http.MethodGet, "/egress/events?"+q.Encode(), nil, &b)
	return b, err
}

// AnswerEgressAsk gives a person's decision to the node's proxy that
// asked.
func (c *Runtime) AnswerEgressAsk(ctx context.Context, id string, a egresshost.Answer) error {
	return c.call(ctx, http.MethodPost, "/egress/asks/"+url.PathEscape(id), a, nil)
}
