package egress

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// KindModelBudget is the event of a model API call the budget gate
// refused (SetModelGate); Reason is the gate's error.
const KindModelBudget = "model_budget"

// modelGate holds the gate in force, so that it can be swapped while
// requests go through.
type modelGate struct{ check func() error }

// SetModelGate sets the check every model API call through an
// intercepted tunnel passes before it is forwarded (nil: none). A non-nil
// error refuses the call with 429 in that API's error shape, its text as
// the message. Safe to call while traffic flows: the next call uses it.
func (s *Sandbox) SetModelGate(gate func() error) {
	if gate == nil {
		s.gate.Store(nil)
		return
	}
	s.gate.Store(&modelGate{check: gate})
}

// gateModelCall asks the gate about c; nil for anything but a model call.
func (s *Sandbox) gateModelCall(c *modelCall) error {
	g := s.gate.Load()
	if c == nil || g == nil {
		return nil
	}
	return g.check()
}

// denyBudget answers a model call the gate refused inside the sandbox's
// TLS session, and makes ev the refusal's event. SDKs retry 429 by
// default (OpenAI's and Anthropic's honor x-should-retry), and a retry
// would only meet the same gate: hence x-should-retry: false and no
// Retry-After. The tunnel stays open when the request's body can be
// drained (the caller's Close of it does) before the next request.
func (m *mitm) denyBudget(ev *Event, req *http.Request, c *modelCall, err error) bool {
	msg := err.Error()
	ev.Status, ev.Decision, ev.Kind, ev.Reason = http.StatusTooManyRequests, Denied, KindModelBudget, msg
	ev.Secret = m.rules().boundName()
	// With 100-continue the client holds its body back for an answer:
	// it has one, and the tunnel ends rather than wait for a body that
	// may never come.
	expect := strings.EqualFold(req.Header.Get("Expect"), "100-continue")
	keep := !expect && req.ProtoAtLeast(1, 1) && !req.Close
	body := budgetBody(c.api, msg)
	head := fmt.Sprintf("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"X-Airlock-Egress: budget\r\nX-Should-Retry: false\r\n", len(body))
	if !keep {
		head += "Connection: close\r\n"
	}
	if _, err := io.WriteString(m.client, head+"\r\n"+string(body)); err != nil {
		return false
	}
	if expect {
		m.client.Close()
	}
	return keep
}

// budgetBody is the refusal in the error shape of api, so that an SDK
// shows the gate's message instead of failing to parse it.
func budgetBody(api, msg string) []byte {
	var v any
	switch api {
	case APIAnthropicMessages:
		v = struct {
			Type  string `json:"type"`
			Error any    `json:"error"`
		}{"error", struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}{"budget_exceeded", msg}}
	case APIGemini:
		v = struct {
			Error any `json:"error"`
		}{struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		}{http.StatusTooManyRequests, msg, "RESOURCE_EXHAUSTED"}}
	default:
		v = struct {
			Error any `json:"error"`
		}{struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		}{msg, "budget_exceeded", "budget_exceeded"}}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and ints only: cannot fail
	}
	return b
}

// boundName is the first binding bound to the target, for events about
// a request that used none.
func (tr *targetRules) boundName() string {
	for i, bound := range tr.bound {
		if bound {
			return tr.set.bindings[i].Name
		}
	}
	return ""
}
