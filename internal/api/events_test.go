package api

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/events"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/store/teststore"
)

// auditingManager is the fake manager that also reports what it does to
// the hub, as the sandbox service's audit log does through OnAudit.
type auditingManager struct {
	*fakeManager
	publish func(audit.Event)
}

func (m auditingManager) emit(c sandbox.Caller, id, typ string, data any) {
	b, _ := json.Marshal(data)
	m.publish(audit.Event{Time: time.Now().UTC(), Sandbox: id, Tenant: c.TenantID, Actor: c.KeyID, Type: typ, Data: b})
}

func (m auditingManager) Create(ctx context.Context, c sandbox.Caller, req sandbox.CreateRequest) (sandboxrec.Sandbox, error) {
	sb, err := m.fakeManager.Create(ctx, c, req)
	if err == nil {
		m.emit(c, sb.ID, audit.SandboxCreated, map[string]any{"template": sb.Template})
	}
	return sb, err
}

func (m auditingManager) Delete(ctx context.Context, c sandbox.Caller, id string) error {
	err := m.fakeManager.Delete(ctx, c, id)
	if err == nil {
		m.emit(c, id, audit.SandboxDestroyed, map[string]any{"reason": "deleted"})
	}
	return err
}

func (m auditingManager) Exec(ctx context.Context, c sandbox.Caller, id string, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	m.emit(c, id, audit.ExecStarted, map[string]any{"argv": req.Cmd}) // not on the stream
	res, err := m.fakeManager.Exec(ctx, c, id, req)
	if err == nil {
		m.emit(c, id, audit.ExecExited, map[string]any{"exit_code": res.ExitCode})
	}
	return res, err
}

// newEventsEnv is newEnv with an event hub (webhooks may reach loopback
// unless opts say otherwise) behind the API and the fake manager.
func newEventsEnv(t *testing.T, opts events.Options) (*env, *events.Hub) {
	t.Helper()
	st := teststore.Open(t)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.RetryBase == 0 {
		opts.RetryBase, opts.RetryMaxDelay = time.Millisecond, 10*time.Millisecond
	}
	hub, err := events.New(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, m: newFakeManager(), st: st, now: t0}
	h := New(auditingManager{e.m, hub.Publish}, st, Options{MaxJSONBody: 4096, Now: e.clock,
		Logger: slog.New(slog.DiscardHandler), Events: hub})
	e.srv = newServer(t, h)
	t.Cleanup(func() { hub.Close() }) // first: it ends the streams the server waits for
	e.admin = e.addTenant("root", true)
	e.alice = e.addTenant("alice", false)
	e.bob = e.addTenant("bob", false)
	return e, hub
}

func newBox(t *testing.T) *secrets.Box {
	b, err := secrets.NewBox([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sseClient reads GET /v1/events in the background.
type sseClient struct {
	resp   *http.Response
	events chan sseFrame
	cancel context.CancelFunc
}

// sseFrame is one dispatched event with its id.
type sseFrame struct {
	ID    string
	Name  string
	Event events.Event
	Raw   string
}

// openEvents opens the stream as cred; lastID, if not "", goes in
// Last-Event-ID. It returns once the answer's headers are in: the
// stream is live from then on.
func (e *env) openEvents(cred, query, lastID string) *sseClient {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/events"+query, nil)
	req.Header.Set("Authorization", "Bearer "+cred)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("GET /v1/events: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	c := &sseClient{resp: resp, events: make(chan sseFrame, 100), cancel: cancel}
	go func() {
		defer close(c.events)
		sc := bufio.NewScanner(resp.Body)
		var f sseFrame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.Name != "" {
					if f.Name != "dropped" && f.Name != "error" {
						json.Unmarshal([]byte(f.Raw), &f.Event)
					}
					c.events <- f
				}
				f = sseFrame{}
			case strings.HasPrefix(line, "id: "):
				f.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				f.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				f.Raw = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	e.t.Cleanup(c.close)
	return c
}

func (c *sseClient) close() {
	c.cancel()
	c.resp.Body.Close()
}

// next waits for n events.
func (c *sseClient) next(t *testing.T, n int) []sseFrame {
	t.Helper()
	var out []sseFrame
	for len(out) < n {
		select {
		case f, ok := <-c.events:
			if !ok {
				t.Fatalf("stream ended after %d of %d events", len(out), n)
			}
			out = append(out, f)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d of %d events", len(out), n)
		}
	}
	return out
}

// none checks that nothing more came once the hub is through everything
// published (events reach streams in order, so a marker of another tenant
// or type would be enough too; the flush is the direct way).
func (c *sseClient) none(t *testing.T, hub *events.Hub) {
	t.Helper()
	hub.Flush()
	select {
	case f, ok := <-c.events:
		if ok {
			t.Errorf("unexpected event %+v", f)
		}
	case <-time.After(50 * time.Millisecond):
	}
}

type seen struct {
	ID      string
	Name    string
	Type    string
	Sandbox string
}

func frames(fs []sseFrame) []seen {
	var out []seen
	for _, f := range fs {
		out = append(out, seen{f.ID, f.Name, f.Event.Type, f.Event.SandboxID})
	}
	return out
}

// GET /v1/events carries create, exec exit and destroy of the caller's
// tenant, and nothing of another's.
func TestEventsStream(t *testing.T) {
	e, hub := newEventsEnv(t, events.Options{})
	alice := e.openEvents(e.alice, "", "")
	bob := e.openEvents(e.bob, "", "")

	id := e.sandbox(e.alice)
	e.must(call{method: "POST", path: "/v1/sandboxes/" + id + "/exec", cred: e.alice, body: `{"cmd":["true"]}`}, 200, nil)
	bobs := e.sandbox(e.bob)
	e.must(call{method: "DELETE", path: "/v1/sandboxes/" + id, cred: e.alice}, 204, nil)

	want := []seen{
		{"1", audit.SandboxCreated, audit.SandboxCreated, id},
		{"2", audit.ExecExited, audit.ExecExited, id},
		{"4", audit.SandboxDestroyed, audit.SandboxDestroyed, id},
	}
	got := alice.next(t, 3)
	if d := cmp.Diff(want, frames(got)); d != "" {
		t.Errorf("alice's stream (-want +got):\n%s", d)
	}
	var data map[string]any
	json.Unmarshal(got[1].Event.Data, &data)
	if data["exit_code"] != 0.0 || got[1].Event.ID != 2 || got[1].Event.Time.IsZero() {
		t.Errorf("exec.exited event %s", got[1].Raw)
	}
	if d := cmp.Diff([]seen{{"3", audit.SandboxCreated, audit.SandboxCreated, bobs}}, frames(bob.next(t, 1))); d != "" {
		t.Errorf("bob's stream (-want +got):\n%s", d)
	}
	alice.none(t, hub)
	bob.none(t, hub)
}

// A client that reconnects with Last-Event-ID gets exactly what it
// missed, then live events.
func TestEventsResume(t *testing.T) {
	e, hub := newEventsEnv(t, events.Options{})
	first := e.openEvents(e.alice, "", "")
	id := e.sandbox(e.alice)
	last := first.next(t, 1)[0].ID
	first.close()

	// While alice is away.
	e.must(call{method: "POST", path: "/v1/sandboxes/" + id + "/exec", cred: e.alice, body: `{"cmd":["true"]}`}, 200, nil)
	e.sandbox(e.bob)
	e.must(call{method: "DELETE", path: "/v1/sandboxes/" + id, cred: e.alice}, 204, nil)
	hub.Flush()

	again := e.openEvents(e.alice, "", last)
	want := []seen{{"2", audit.ExecExited, audit.ExecExited, id}, {"4", audit.SandboxDestroyed, audit.SandboxDestroyed, id}}
	if d := cmp.Diff(want, frames(again.next(t, 2))); d != "" {
		t.Errorf("missed events (-want +got):\n%s", d)
	}
	id2 := e.sandbox(e.alice)
	if d := cmp.Diff([]seen{{"5", audit.SandboxCreated, audit.SandboxCreated, id2}}, frames(again.next(t, 1))); d != "" {
		t.Errorf("live after resume (-want +got):\n%s", d)
	}
	again.none(t, hub)

	// ?after= does the same, and ?type= filters.
	q := e.openEvents(e.alice, "?after=0&type=sandbox.destroyed", "")
	if d := cmp.Diff([]seen{{"4", audit.SandboxDestroyed, audit.SandboxDestroyed, id}}, frames(q.next(t, 1))); d != "" {
		t.Errorf("after=0, destroyed only (-want +got):\n%s", d)
	}
	q.none(t, hub)
}

func TestEventsBadInput(t *testing.T) {
	e, _ := newEventsEnv(t, events.Options{})
	id := e.sandbox(e.alice)
	tok := e.token(e.alice, id, 60)
	for _, tc := range []struct {
		query, lastID, cred string
		status              int
	}{
		{"?after=-1", "", e.alice, 400},
		{"?after=x", "", e.alice, 400},
		{"", "abc", e.alice, 400},
		{"?type=exec.output", "", e.alice, 400},
		{"?typo=1", "", e.alice, 400},
		{"", "", tok, 403},
		{"", "", "", 401},
	} {
		req, _ := http.NewRequest("GET", e.srv.URL+"/v1/events"+tc.query, nil)
		if tc.cred != "" {
			req.Header.Set("Authorization", "Bearer "+tc.cred)
		}
		if tc.lastID != "" {
			req.Header.Set("Last-Event-ID", tc.lastID)
		}
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var eb errorBody
		if resp.StatusCode != tc.status || json.Unmarshal(b, &eb) != nil || eb.Error.Code == "" {
			t.Errorf("%q Last-Event-ID %q: %d %s, want %d with a JSON error", tc.query, tc.lastID, resp.StatusCode, b, tc.status)
		}
	}
}

// hookReceiver answers deliveries with the statuses in order (the last
// from then on) and keeps what it got.
type hookReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []*http.Request
	bodies   [][]byte
	statuses []int
}

func newHookReceiver(t *testing.T, statuses ...int) *hookReceiver {
	r := &hookReceiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got, r.bodies = append(r.got, req), append(r.bodies, b)
		status := r.statuses[min(len(r.got), len(r.statuses))-1]
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// checkSignature verifies Airlock-Signature as docs/API.md tells
// receivers to: t=UNIX,v1=hex(HMAC-SHA256(secret, t + "." + body)).
func checkSignature(t *testing.T, secret string, h http.Header, body []byte) {
	t.Helper()
	parts := map[string]string{}
	for _, p := range strings.Split(h.Get("Airlock-Signature"), ",") {
		k, v, _ := strings.Cut(p, "=")
		parts[k] = v
	}
	ts, err := strconv.ParseInt(parts["t"], 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		t.Errorf("signature time %q", parts["t"])
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(parts["t"] + "." + string(body)))
	if want := hex.EncodeToString(m.Sum(nil)); !hmac.Equal([]byte(want), []byte(parts["v1"])) {
		t.Errorf("Airlock-Signature %q does not verify over %s", h.Get("Airlock-Signature"), body)
	}
}

const hookSecret = "alice-webhook-secret-0123456789"

type deliveryJSON struct {
	ID          string    `json:"id"`
	EventID     int64     `json:"event_id"`
	EventType   string    `json:"event_type"`
	State       string    `json:"state"`
	DeliveredAt time.Time `json:"delivered_at"`
	Attempts    []struct {
		N      int    `json:"n"`
		Status int    `json:"status"`
		Error  string `json:"error"`
	} `json:"attempts"`
}

// A webhook on loopback gets signed deliveries for create and destroy;
// the routes are the tenant's own.
func TestWebhookDeliveries(t *testing.T) {
	e, _ := newEventsEnv(t, events.Options{Box: newBox(t), AllowPrivate: true})
	r := newHookReceiver(t, 204)
	var hook events.Webhook
	e.must(call{method: "POST", path: "/v1/webhooks", cred: e.alice,
		body: `{"url":"` + r.URL + `/hook","events":["sandbox.created","sandbox.destroyed"],"secret":"` + hookSecret + `"}`}, 201, &hook)
	if hook.Secret != hookSecret || !strings.HasPrefix(hook.ID, "wh_") {
		t.Errorf("created %+v", hook)
	}

	id := e.sandbox(e.alice)
	e.must(call{method: "POST", path: "/v1/sandboxes/" + id + "/exec", cred: e.alice, body: `{"cmd":["true"]}`}, 200, nil)
	e.sandbox(e.bob)
	e.must(call{method: "DELETE", path: "/v1/sandboxes/" + id, cred: e.alice}, 204, nil)

	var list struct {
		Deliveries []deliveryJSON `json:"deliveries"`
	}
	path := "/v1/webhooks/" + hook.ID + "/deliveries"
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.must(call{method: "GET", path: path, cred: e.alice}, 200, &list)
		if len(list.Deliveries) == 2 && list.Deliveries[0].State == "delivered" && list.Deliveries[1].State == "delivered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries: %+v", list.Deliveries)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Newest first: destroy, then create.
	if list.Deliveries[0].EventType != audit.SandboxDestroyed || list.Deliveries[1].EventType != audit.SandboxCreated {
		t.Errorf("deliveries %+v", list.Deliveries)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != 2 {
		t.Fatalf("receiver got %d requests, want 2", len(r.got))
	}
	var types []string
	for i, req := range r.got {
		checkSignature(t, hookSecret, req.Header, r.bodies[i])
		var ev events.Event
		if err := json.Unmarshal(r.bodies[i], &ev); err != nil || ev.SandboxID != id {
			t.Errorf("body %s: %v", r.bodies[i], err)
		}
		if req.URL.Path != "/hook" || req.Header.Get("Airlock-Delivery-Attempt") != "1" || req.Header.Get("Airlock-Delivery-Id") == "" {
			t.Errorf("request %s with %v", req.URL, req.Header)
		}
		types = append(types, ev.Type)
	}
	// Deliveries run concurrently: their order is not the events'.
	slices.Sort(types)
	if d := cmp.Diff([]string{audit.SandboxCreated, audit.SandboxDestroyed}, types); d != "" {
		t.Errorf("delivered (-want +got):\n%s", d)
	}

	// The tenant's own: bob sees no webhook and cannot touch alice's.
	var hooks struct {
		Webhooks []map[string]any `json:"webhooks"`
	}
	e.must(call{method: "GET", path: "/v1/webhooks", cred: e.alice}, 200, &hooks)
	if len(hooks.Webhooks) != 1 || hooks.Webhooks[0]["id"] != hook.ID || hooks.Webhooks[0]["secret"] != nil {
		t.Errorf("alice's webhooks %v", hooks.Webhooks)
	}
	e.must(call{method: "GET", path: "/v1/webhooks", cred: e.bob}, 200, &hooks)
	if len(hooks.Webhooks) != 0 {
		t.Errorf("bob sees %v", hooks.Webhooks)
	}
	e.must(call{method: "GET", path: path, cred: e.bob}, 404, nil)
	e.must(call{method: "DELETE", path: "/v1/webhooks/" + hook.ID, cred: e.bob}, 404, nil)
	e.must(call{method: "DELETE", path: "/v1/webhooks/" + hook.ID, cred: e.alice}, 204, nil)
	e.must(call{method: "GET", path: path, cred: e.alice}, 404, nil)
}

// A receiver that fails twice gets the delivery once with success, as
// attempt 3 under the same delivery id, and the deliveries route shows
// the three attempts.
func TestWebhookRetryThenSuccess(t *testing.T) {
	e, _ := newEventsEnv(t, events.Options{Box: newBox(t), AllowPrivate: true})
	r := newHookReceiver(t, 500, 502, 200)
	var hook events.Webhook
	e.must(call{method: "POST", path: "/v1/webhooks", cred: e.alice,
		body: `{"url":"` + r.URL + `","events":["*"],"secret":"` + hookSecret + `"}`}, 201, &hook)
	id := e.sandbox(e.alice)

	var list struct {
		Deliveries []deliveryJSON `json:"deliveries"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(list.Deliveries) != 1 || list.Deliveries[0].State != "delivered" {
		if time.Now().After(deadline) {
			t.Fatalf("deliveries: %+v", list.Deliveries)
		}
		time.Sleep(5 * time.Millisecond)
		e.must(call{method: "GET", path: "/v1/webhooks/" + hook.ID + "/deliveries", cred: e.alice}, 200, &list)
	}
	d := list.Deliveries[0]
	type attempt struct{ N, Status int }
	var attempts []attempt
	for _, a := range d.Attempts {
		attempts = append(attempts, attempt{a.N, a.Status})
	}
	if diff := cmp.Diff([]attempt{{1, 500}, {2, 502}, {3, 200}}, attempts); diff != "" || d.DeliveredAt.IsZero() || d.EventType != audit.SandboxCreated {
		t.Errorf("attempts (-want +got):\n%s delivery %+v", diff, d)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != 3 {
		t.Fatalf("receiver got %d requests, want 3", len(r.got))
	}
	for i, req := range r.got {
		checkSignature(t, hookSecret, req.Header, r.bodies[i])
		if a := req.Header.Get("Airlock-Delivery-Attempt"); a != strconv.Itoa(i+1) {
			t.Errorf("request %d: Airlock-Delivery-Attempt %q", i+1, a)
		}
		if got := req.Header.Get("Airlock-Delivery-Id"); got != d.ID {
			t.Errorf("request %d: Airlock-Delivery-Id %q, want %q", i+1, got, d.ID)
		}
		var ev events.Event
		if json.Unmarshal(r.bodies[i], &ev); ev.SandboxID != id || ev.ID != d.EventID {
			t.Errorf("request %d: body %s", i+1, r.bodies[i])
		}
	}
}

func TestWebhookBadInput(t *testing.T) {
	e, _ := newEventsEnv(t, events.Options{Box: newBox(t)})
	for _, tc := range []struct {
		body   string
		status int
		msg    string
	}{
		{`{"url":"http://127.0.0.1:9/","events":["*"]}`, 400, "loopback address"},
		{`{"url":"http://169.254.169.254/","events":["*"]}`, 400, "metadata address"},
		{`{"url":"ftp://example.com/","events":["*"]}`, 400, "http or https"},
		{`{"url":"https://user:pw@example.com/","events":["*"]}`, 400, "credentials"},
		{`{"url":"https://example.com/","events":["exec.output"]}`, 400, "unknown event type"},
		{`{"url":"https://example.com/","events":[]}`, 400, "is empty"},
		{`{"url":"https://example.com/","events":["*"],"secret":"short"}`, 400, "secret"},
		{`{"url":"https://example.com/","events":["*"],"colour":"red"}`, 400, "unknown field"},
		{`{"url":"https://example.com/","events":"*"}`, 400, "events"},
	} {
		a := e.do(call{method: "POST", path: "/v1/webhooks", cred: e.alice, body: tc.body})
		code, msg := a.errCode()
		if a.status != tc.status || code != codeInvalid || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %d %s %q, want %d with %q", tc.body, a.status, code, msg, tc.status, tc.msg)
		}
	}
	var hooks struct {
		Webhooks []events.Webhook `json:"webhooks"`
	}
	e.must(call{method: "GET", path: "/v1/webhooks", cred: e.alice}, 200, &hooks)
	if len(hooks.Webhooks) != 0 {
		t.Errorf("bad requests left %+v", hooks.Webhooks)
	}
	e.must(call{method: "GET", path: "/v1/webhooks/wh_nope/deliveries?limit=0", cred: e.alice}, 400, nil)
	e.must(call{method: "GET", path: "/v1/webhooks/wh_nope/deliveries", cred: e.alice}, 404, nil)
	id := e.sandbox(e.alice)
	e.must(call{method: "GET", path: "/v1/webhooks", cred: e.token(e.alice, id, 60)}, 403, nil)

	// Without a master key webhooks are refused with a 4xx that says why.
	nobox, _ := newEventsEnv(t, events.Options{})
	a := nobox.do(call{method: "POST", path: "/v1/webhooks", cred: nobox.alice, body: `{"url":"https://example.com/","events":["*"]}`})
	if code, msg := a.errCode(); a.status != 403 || code != codeForbidden || !strings.Contains(msg, "master key") {
		t.Errorf("without a box: %d %s %q", a.status, code, msg)
	}
}
