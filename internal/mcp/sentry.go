package mcp

import (
	"context"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

// sentry watches for approvals beside a call that waits on a sandbox and,
// when the session can be asked (askElicit), asks its user about each in
// turn, one question at a time. The call owns it: finish stops it and
// waits for it.
type sentry struct {
	w       *watch
	session *mcpsdk.ServerSession // nil: nobody to ask
	cancel  context.CancelFunc
	done    chan struct{}

	mu    sync.Mutex
	notes []string
}

// startSentry starts watching t for the call req. It notes what is
// pending before it returns, so the caller acts only after that.
func startSentry(ctx context.Context, req *mcpsdk.CallToolRequest, c *client.Client, t target) *sentry {
	s := &sentry{done: make(chan struct{})}
	if askModeOf(req) == askElicit {
		s.session = req.Session
	}
	w, err := newWatch(ctx, c, t)
	s.w = w
	if err != nil {
		s.note("approvals could not be watched: " + err.Error())
		close(s.done)
		s.cancel = func() {}
		return s
	}
	sctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	go s.run(sctx)
	return s
}

// asking is one question in flight.
type asking struct {
	id     string
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *sentry) run(ctx context.Context) {
	defer close(s.done)
	tick := time.NewTicker(approvalPoll)
	defer tick.Stop()
	var cur *asking
	var queue []client.Approval
	defer func() {
		if cur != nil {
			cur.cancel()
			<-cur.done
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		opened, pending, err := s.w.poll(ctx, 100)
		if err != nil {
			continue // a failed look is retried at the next tick
		}
		if s.session == nil {
			continue
		}
		queue = append(queue, opened...)
		if cur != nil {
			select {
			case <-cur.done:
				cur = nil
			default:
				if !pending[cur.id] {
					// Decided elsewhere, or timed out: the question is moot.
					cur.cancel()
					<-cur.done
					cur = nil
				}
			}
		}
		for cur == nil && len(queue) > 0 {
			a := queue[0]
			queue = queue[1:]
			if pending[a.ID] {
				cur = s.ask(ctx, a)
			}
		}
	}
}

// ask puts a to the session's user and decides it with their answer.
func (s *sentry) ask(ctx context.Context, a client.Approval) *asking {
	actx, cancel := context.WithCancel(ctx)
	q := &asking{id: a.ID, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(q.done)
		defer cancel()
		res, err := s.session.Elicit(actx, askParams(a))
		if err != nil {
			if actx.Err() == nil {
				s.note("approval " + a.ID + " could not be asked about in this MCP client: " + err.Error())
			}
			return
		}
		// The answer is recorded even if the call ends meanwhile: the
		// person gave it.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(actx), 10*time.Second)
		defer dcancel()
		if msg := answer(dctx, s.w.c, a.ID, res); msg != "" {
			s.note(msg)
		}
	}()
	return q
}

func (s *sentry) note(msg string) {
	s.mu.Lock()
	s.notes = append(s.notes, msg)
	s.mu.Unlock()
}

// finish stops the sentry and says which approvals the call waited on
// and how they ended, with notes for what went otherwise.
func (s *sentry) finish(ctx context.Context) ([]approvalOut, []string) {
	s.cancel()
	<-s.done
	out, notes := s.w.ended(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return out, append(s.notes, notes...)
}
