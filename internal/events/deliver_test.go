package events

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/events/eventrec"
	"github.com/airlockhq/airlock/internal/store/teststore"
)

// received is one request a test receiver got.
type received struct {
	Header http.Header
	Body   []byte
}

// receiver is a webhook endpoint on loopback that answers with the
// statuses in order (the last one from then on).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []received
	statuses []int
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Clone(), body})
		status := r.statuses[min(len(r.got), len(r.statuses))-1]
		r.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, "answer of "+strconv.Itoa(status))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// verify checks a delivery's signature the way a receiver would, written
// here from the documented scheme rather than with Sign.
func verify(t *testing.T, secret string, rq received) {
	t.Helper()
	var ts, sig string
	for _, part := range strings.Split(rq.Header.Get("Airlock-Signature"), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		t.Errorf("signature time %q is not now", ts)
	}
	m := hmac.New(sha256.New, []byte(secret))
	io.WriteString(m, ts+"."+string(rq.Body))
	want := hex.EncodeToString(m.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		t.Errorf("signature %q does not verify (want v1=%s)", rq.Header.Get("Airlock-Signature"), want)
	}
	// A body changed in transit does not verify.
	m = hmac.New(sha256.New, []byte(secret))
	io.WriteString(m, ts+"."+string(rq.Body)+" ")
	if hex.EncodeToString(m.Sum(nil)) == sig {
		t.Error("the signature does not cover the body")
	}
}

const testSecret = "0123456789abcdef-test-secret"

func TestWebhookSignedDeliveries(t *testing.T) {
	st := teststore.Open(t)
	h := newHub(t, st, Options{Box: testBox(t), AllowPrivate: true})
	r := newReceiver(t, 204)
	ctx := context.Background()
	w, err := h.CreateWebhook(ctx, "ten_a", WebhookRequest{URL: r.URL + "/hook", Events: []string{"*"}, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	// Another tenant's events never reach it.
	h.Publish(ev("ten_b", "sb_9", audit.SandboxCreated))
	h.Publish(ev("ten_a", "sb_1", audit.SandboxCreated))
	h.Publish(ev("ten_a", "sb_1", audit.ExecOutput))
	h.Publish(ev("ten_a", "sb_1", audit.SandboxDestroyed))
	waitFor(t, "two deliveries", func() bool { return len(r.requests()) >= 2 })
	h.Flush()

	got := r.requests()
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	var types []string
	ids := map[string]bool{}
	for _, rq := range got {
		verify(t, testSecret, rq)
		var e Event
		if err := json.Unmarshal(rq.Body, &e); err != nil {
			t.Fatalf("body %s: %v", rq.Body, err)
		}
		if e.SandboxID != "sb_1" || rq.Header.Get("Airlock-Event-Type") != e.Type ||
			rq.Header.Get("Airlock-Event-Id") != strconv.FormatInt(e.ID, 10) ||
			rq.Header.Get("Airlock-Delivery-Attempt") != "1" || rq.Header.Get("Content-Type") != "application/json" {
			t.Errorf("delivery %s with headers %v", rq.Body, rq.Header)
		}
		types = append(types, e.Type)
		ids[rq.Header.Get("Airlock-Delivery-Id")] = true
	}
	if d := cmp.Diff([]string{audit.SandboxCreated, audit.SandboxDestroyed}, types,
		cmpSorted); d != "" {
		t.Errorf("delivered types (-want +got):\n%s", d)
	}
	if len(ids) != 2 || ids[""] {
		t.Errorf("delivery ids %v: want two distinct", ids)
	}
	// The secret is shown once; the list never has it.
	list, err := h.ListWebhooks(ctx, "ten_a")
	if err != nil || len(list) != 1 || list[0].Secret != "" || list[0].ID != w.ID {
		t.Errorf("list %+v, %v", list, err)
	}
	if list, _ := h.ListWebhooks(ctx, "ten_b"); len(list) != 0 {
		t.Errorf("tenant b sees %+v", list)
	}
}

var cmpSorted = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

// A receiver that fails twice gets the delivery a third time, marked as
// attempt 3 under the same delivery id; the log shows all three.
func TestWebhookRetried(t *testing.T) {
	st := teststore.Open(t)
	h := newHub(t, st, Options{Box: testBox(t), AllowPrivate: true})
	r := newReceiver(t, 500, 503, 200)
	ctx := context.Background()
	w, err := h.CreateWebhook(ctx, "ten_a", WebhookRequest{URL: r.URL, Events: []string{audit.SandboxCreated}, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	h.Publish(ev("ten_a", "sb_1", audit.SandboxCreated))
	var list []Delivery
	waitFor(t, "delivered", func() bool {
		list, err = h.Deliveries(ctx, "ten_a", w.ID, 0, 10)
		return err == nil && len(list) == 1 && list[0].State == eventrec.DeliveryDelivered
	})
	got := r.requests()
	if len(got) != 3 {
		t.Fatalf("%d requests, want 3", len(got))
	}
	for i, rq := range got {
		verify(t, testSecret, rq)
		if a := rq.Header.Get("Airlock-Delivery-Attempt"); a != strconv.Itoa(i+1) {
			t.Errorf("request %d: attempt header %q", i+1, a)
		}
		if id := rq.Header.Get("Airlock-Delivery-Id"); id != list[0].ID {
			t.Errorf("request %d: delivery id %q, want %q", i+1, id, list[0].ID)
		}
		if string(rq.Body) != string(got[0].Body) {
			t.Errorf("request %d: body %s differs from the first %s", i+1, rq.Body, got[0].Body)
		}
	}
	var attempts []Attempt
	for _, a := range list[0].Attempts {
		a.Time, a.DurationMS = time.Time{}, 0
		attempts = append(attempts, a)
	}
	want := []Attempt{{N: 1, Status: 500, Error: "HTTP 500: answer of 500"}, {N: 2, Status: 503, Error: "HTTP 503: answer of 503"}, {N: 3, Status: 200}}
	if d := cmp.Diff(want, attempts); d != "" {
		t.Errorf("attempts (-want +got):\n%s", d)
	}
	if list[0].DeliveredAt.IsZero() || !list[0].NextAttemptAt.IsZero() || list[0].EventType != audit.SandboxCreated {
		t.Errorf("delivery %+v", list[0])
	}
	// Nothing more is sent once it is delivered.
	h.Flush()
	if n := len(r.requests()); n != 3 {
		t.Errorf("%d requests after delivery", n)
	}
}

// clock is a test's time, moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Retries stop once RetryFor has passed since the event; the delivery is
// marked failed. The clock moves a second per attempt, so with RetryFor 5 s
// attempts 1-5 (at 0-4 s) are retried and attempt 6 (at 5 s) is the last.
func TestWebhookGivesUp(t *testing.T) {
	st := teststore.Open(t)
	c := &clock{t: time.Now().UTC().Truncate(time.Microsecond)}
	h := newHub(t, st, Options{Box: testBox(t), AllowPrivate: true, RetryFor: 5 * time.Second, Now: c.now})
	r := newReceiver(t, 500)
	ctx := context.Background()
	w, _ := h.CreateWebhook(ctx, "ten_a", WebhookRequest{URL: r.URL, Events: []string{"*"}, Secret: testSecret})
	e := ev("ten_a", "sb_1", audit.SandboxFailed)
	e.Time = c.now()
	h.Publish(e)
	var list []Delivery
	for n := 1; ; n++ {
		waitFor(t, "attempt "+strconv.Itoa(n), func() bool {
			list, _ = h.Deliveries(ctx, "ten_a", w.ID, 0, 10)
			return len(list) == 1 && len(list[0].Attempts) == n
		})
		if list[0].State != eventrec.DeliveryPending || n > 10 {
			break
		}
		c.add(time.Second)
	}
	if n := len(list[0].Attempts); n != 6 || list[0].State != eventrec.DeliveryFailed || list[0].FailedAt.IsZero() {
		t.Errorf("after %d attempts: %+v", n, list[0])
	}
	c.add(time.Hour)
	h.Flush()
	if got := len(r.requests()); got != 6 {
		t.Errorf("receiver got %d requests, want 6", got)
	}
}

// A pending delivery survives a restart and is made by the next process.
func TestWebhookPendingAcrossRestart(t *testing.T) {
	st := teststore.Open(t)
	box := testBox(t)
	r := newReceiver(t, 500, 204)
	h := newHub(t, st, Options{Box: box, AllowPrivate: true, RetryBase: time.Hour, RetryMaxDelay: time.Hour})
	ctx := context.Background()
	w, _ := h.CreateWebhook(ctx, "ten_a", WebhookRequest{URL: r.URL, Events: []string{"*"}, Secret: testSecret})
	h.Publish(ev("ten_a", "sb_1", audit.SandboxCreated))
	waitFor(t, "first attempt recorded", func() bool {
		list, _ := h.Deliveries(ctx, "ten_a", w.ID, 0, 10)
		return len(list) == 1 && len(list[0].Attempts) == 1
	})
	h.Close()

	// The next process, two hours on: the retry is due.
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	h2 := newHub(t, st, Options{Box: box, AllowPrivate: true, Now: later})
	var list []Delivery
	waitFor(t, "delivered after restart", func() bool {
		list, _ = h2.Deliveries(ctx, "ten_a", w.ID, 0, 10)
		return len(list) == 1 && list[0].State == eventrec.DeliveryDelivered
	})
	got := r.requests()
	if len(got) != 2 || got[1].Header.Get("Airlock-Delivery-Attempt") != "2" {
		t.Errorf("requests: %d, last attempt header %q", len(got), got[len(got)-1].Header.Get("Airlock-Delivery-Attempt"))
	}
}

// Without AllowPrivate a webhook whose name resolves to a private address
// is refused when it is dialed (DNS rebinding): here the stored URL names
// loopback directly, as a rebound name would resolve.
func TestWebhookDialRefusesPrivate(t *testing.T) {
	st := teststore.Open(t)
	box := testBox(t)
	r := newReceiver(t, 204)
	ctx := context.Background()
	sw := eventrec.Webhook{ID: "wh_rebound", TenantID: "ten_a", URL: r.URL, Events: []string{"*"},
		Sealed: box.Seal([]byte(testSecret), webhookAD("ten_a", "wh_rebound")), CreatedAt: time.Now()}
	if err := st.CreateWebhook(ctx, sw); err != nil {
		t.Fatal(err)
	}
	h := newHub(t, st, Options{Box: box, RetryFor: 20 * time.Millisecond})
	h.Publish(ev("ten_a", "sb_1", audit.SandboxCreated))
	var list []Delivery
	waitFor(t, "given up", func() bool {
		list, _ = h.Deliveries(ctx, "ten_a", sw.ID, 0, 10)
		return len(list) == 1 && list[0].State == eventrec.DeliveryFailed
	})
	if n := len(r.requests()); n != 0 {
		t.Errorf("the loopback receiver got %d requests", n)
	}
	if a := list[0].Attempts[0]; !strings.Contains(a.Error, "127.0.0.1 is a loopback address") || a.Status != 0 {
		t.Errorf("attempt %+v: want a refused dial", a)
	}
}

// A redirect is an answer, never followed: the request must not reach
// where it points.
func TestWebhookRedirectNotFollowed(t *testing.T) {
	st := teststore.Open(t)
	target := newReceiver(t, 204)
	redir := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer redir.Close()
	h := newHub(t, st, Options{Box: testBox(t), AllowPrivate: true, RetryFor: 20 * time.Millisecond})
	ctx := context.Background()
	w, _ := h.CreateWebhook(ctx, "ten_a", WebhookRequest{URL: redir.URL, Events: []string{"*"}})
	h.Publish(ev("ten_a", "sb_1", audit.SandboxCreated))
	var list []Delivery
	waitFor(t, "given up", func() bool {
		list, _ = h.Deliveries(ctx, "ten_a", w.ID, 0, 10)
		return len(list) == 1 && list[0].State == eventrec.DeliveryFailed
	})
	if n := len(target.requests()); n != 0 {
		t.Errorf("the redirect target got %d requests", n)
	}
	if a := list[0].Attempts[0]; a.Status != 307 || !strings.Contains(a.Error, "redirects are not followed") {
		t.Errorf("attempt %+v", a)
	}
}

// Deleting a webhook stops its deliveries: one pending is never made.
func TestDeleteWebhook(t *testing.T) {
	st := teststore.Open(t)
	r := newReceiver(t, 500)
	h := newHub(t, st, Options{Box: testBox(t), AllowPrivate: true, RetryBase: time.Hour, RetryMaxDelay: time.Hour})
	ctx := context.Background()
	w, _ := h.CreateWebhook(ctx, "ten_a", WebhookRequest{URL: r.URL, Events: []string{"*"}, Secret: testSecret})
	if err := h.DeleteWebhook(ctx, "ten_b", w.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("delete by another tenant: %v", err)
	}
	if _, err := h.Deliveries(ctx, "ten_b", w.ID, 0, 10); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("deliveries for another tenant: %v", err)
	}
	h.Publish(ev("ten_a", "sb_1", audit.SandboxCreated))
	waitFor(t, "first attempt", func() bool { return len(r.requests()) == 1 })
	if err := h.DeleteWebhook(ctx, "ten_a", w.ID); err != nil {
		t.Fatal(err)
	}
	h.Publish(ev("ten_a", "sb_1", audit.SandboxDestroyed))
	h.Flush()
	if next, _ := st.NextDelivery(ctx, time.Time{}); !next.IsZero() {
		t.Errorf("a delivery is still pending at %v", next)
	}
	if _, err := h.Deliveries(ctx, "ten_a", w.ID, 0, 10); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("deliveries of a deleted webhook: %v", err)
	}
}
