package egress

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// modelCall is one recognized model API call on an intercepted tunnel.
type modelCall struct {
	api       string
	pathModel string // Gemini's, from the path
	stream    bool   // Gemini's streamGenerateContent
	start     time.Time
	tee       *prefixTee // the request body as the sandbox sent it
	tap       *usageTap
}

// newModelCall returns the call req makes, or nil if it is no model call.
// It keeps the start of the request body, before any value goes into it,
// to name the model if the answer does not.
func newModelCall(req *http.Request) *modelCall {
	api, pathModel := modelCallOf(req)
	if api == "" {
		return nil
	}
	c := &modelCall{api: api, pathModel: pathModel, start: time.Now(),
		stream: strings.HasSuffix(req.URL.Path, ":streamGenerateContent")}
	if req.Body != nil && req.Body != http.NoBody {
		c.tee = &prefixTee{ReadCloser: req.Body}
		req.Body = c.tee
	}
	return c
}

// watch reads the usage from resp's body as it streams through, and logs
// it as ev's KindModelUsage event; resp must be scrubbed already, so
// nothing read here holds a value.
func (c *modelCall) watch(s *Sandbox, resp *http.Response, use *requestUse, ev Event) {
	if c == nil {
		return
	}
	model := c.pathModel
	if c.api != APIGemini && c.tee != nil {
		model = requestModel(c.tee.buf)
	}
	ev.Kind, ev.Secret, ev.Status, ev.Reason = KindModelUsage, use.bindingName(), resp.StatusCode, ""
	ev.BytesUp, ev.BytesDown = 0, 0
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	ce := resp.Header.Get("Content-Encoding")
	t := &usageTap{s: s, ev: ev, start: c.start, api: c.api, reqModel: model, body: resp.Body,
		streamed: mt == "text/event-stream" || c.stream}
	c.tap = t
	switch {
	case resp.StatusCode/100 != 2, ce != "" && !strings.EqualFold(ce, "identity"):
		// An error answers no usage; a compressed one (the proxy asked
		// for identity) cannot be read.
	case mt == "text/event-stream":
		t.sse = &sseReader{onEvent: t.onEvent}
	default:
		t.js = &jsonScan{onValue: func(b []byte) { t.onEvent("", b) }, onEnd: t.emit}
	}
	if resp.Body != nil && resp.Body != http.NoBody {
		resp.Body = t
	}
}

// finish logs the call's usage if its body did not end where the usage
// was read: the sandbox went away, or the answer had no body.
func (c *modelCall) finish() {
	if c == nil || c.tap == nil || c.tap.emitted {
		return
	}
	c.tap.have = false // a body not read to its end is cut
	c.tap.emit()
}

// usageTap passes an answer through unchanged and reads its usage on the
// way. The usage event is logged synchronously as the bytes that carry
// the usage come through, before Read returns them to be written to the
// sandbox: an agent's next call, and the budget gate it passes, always
// see the last call's cost.
type usageTap struct {
	s        *Sandbox
	ev       Event
	start    time.Time
	api      string
	reqModel string
	body     io.ReadCloser
	streamed bool
	sse      *sseReader
	js       *jsonScan

	model   string // the answer's
	have    bool   // t holds the usage the answer gave
	t       tokens
	anth    wireUsage // an Anthropic stream's usage so far
	emitted bool
}

func (t *usageTap) Read(p []byte) (int, error) {
	n, err := t.body.Read(p)
	if t.emitted {
		return n, err
	}
	switch {
	case t.sse != nil:
		t.sse.feed(p[:n])
	case t.js != nil:
		t.js.feed(p[:n])
	}
	if err != nil && !t.emitted {
		// A clean end completes a stream whose usage has no closing
		// event (Gemini's); a JSON value cut short, or a stream cut by
		// an error, leaves the usage unknown.
		t.have = t.have && err == io.EOF && (t.js == nil || t.js.done)
		t.emit()
	}
	return n, err
}

func (t *usageTap) Close() error { return t.body.Close() }

// onEvent reads one stream event or JSON object, and logs the usage if
// it is the API's last word.
func (t *usageTap) onEvent(_ string, data []byte) {
	if t.emitted {
		return
	}
	if t.sse != nil && string(data) == "[DONE]" {
		t.emit() // the end of a Chat Completions stream
		return
	}
	var msg wireMsg
	if json.Unmarshal(data, &msg) != nil {
		return
	}
	if t.observe(&msg) {
		t.emit()
	}
}

// observe takes the usage and model from one answer or stream event; it
// reports whether the stream's usage is final.
func (t *usageTap) observe(msg *wireMsg) (final bool) {
	switch t.api {
	case APIOpenAIResponses:
		if r := msg.Response; r != nil { // a stream event
			t.setModel(r.Model)
			switch msg.Type {
			case "response.completed", "response.incomplete", "response.failed":
				if r.Usage != nil {
					t.t, t.have = r.Usage.openAIResponses(), true
				}
				return true
			}
			return false
		}
		t.setModel(msg.Model)
		if msg.Usage != nil {
			t.t, t.have = msg.Usage.openAIResponses(), true
		}
	case APIOpenAIChat:
		t.setModel(msg.Model)
		if msg.Usage != nil {
			t.t, t.have = msg.Usage.openAIChat(), true
			// The include_usage chunk has no choices; providers that
			// send usage on every chunk end with [DONE].
			return t.sse != nil && len(msg.Choices) == 0
		}
	case APIAnthropicMessages:
		switch msg.Type {
		case "message_start":
			if m := msg.Message; m != nil {
				t.setModel(m.Model)
				if m.Usage != nil {
					t.anth.mergeLatest(m.Usage)
				}
			}
		case "message_delta":
			if msg.Usage != nil {
				t.anth.mergeLatest(msg.Usage)
				t.t, t.have = t.anth.anthropic(), true
			}
		case "message_stop":
			return true
		default:
			t.setModel(msg.Model)
			if msg.Usage != nil {
				t.t, t.have = msg.Usage.anthropic(), true
			}
		}
	case APIGemini:
		t.setModel(msg.ModelVersion)
		if msg.UsageMetadata != nil {
			t.t, t.have = msg.UsageMetadata.tokens(), true
		}
	}
	return false
}

func (t *usageTap) setModel(m string) {
	if m != "" {
		t.model = m
	}
}

// emit logs the usage event, once.
func (t *usageTap) emit() {
	if t.emitted {
		return
	}
	t.emitted = true
	u := &ModelUsage{API: t.api, Model: shortModel(t.model), Streamed: t.streamed}
	if u.Model == "" {
		u.Model = shortModel(t.reqModel)
	}
	if t.have {
		u.InputTokens, u.CachedInputTokens = t.t.input, t.t.cached
		u.OutputTokens, u.ReasoningTokens = t.t.output, t.t.reasoning
	}
	ev := t.ev
	ev.Usage = u
	ev.DurationMS = float64(time.Since(t.start).Microseconds()) / 1000
	t.s.event(ev)
}

// bindingName names the binding a request used: the first one put into
// it, else the first one bound to its host.
func (u *requestUse) bindingName() string {
	for i, bound := range u.tr.bound {
		b := &u.tr.set.bindings[i]
		if bound && (u.header[i] > 0 || u.added[i] || b.Body && u.body != nil && u.body.counts[i] > 0) {
			return b.Name
		}
	}
	return u.tr.boundName()
}
