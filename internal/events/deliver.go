package events

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/events/eventrec"
)

// Headers of a delivery. The delivery id is the same on every attempt:
// receivers use it to act once on a delivery they got twice.
const (
	HeaderSignature  = "Airlock-Signature"
	HeaderDeliveryID = "Airlock-Delivery-Id"
	HeaderAttempt    = "Airlock-Delivery-Attempt"
	HeaderEventID    = "Airlock-Event-Id"
	HeaderEventType  = "Airlock-Event-Type"
)

// maxAnswer bounds what is read of a receiver's answer; an excerpt of a
// failed one is kept with the attempt.
const (
	maxAnswer  = 64 << 10
	maxExcerpt = 200
)

// idlePoll is how long the dispatcher sleeps when nothing is due; new
// deliveries wake it sooner.
const idlePoll = time.Minute

// Sign returns the Airlock-Signature value for body sent at t:
// "t=UNIX,v1=HEX", HEX being the HMAC-SHA256 under secret of the Unix
// time, ".", and the body. The time is signed so that a captured delivery
// cannot be replayed later: receivers refuse a t far from their clock.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// dispatcher sends due deliveries, up to Options.Workers at once, and
// records every attempt. Its state is the store's: a restart resumes it.
type dispatcher struct {
	h      *Hub
	hc     *http.Client
	pokes  chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wg     sync.WaitGroup
}

func newDispatcher(h *Hub) *dispatcher {
	ctx, cancel := context.WithCancel(context.Background())
	d := &dispatcher{h: h, hc: newHTTPClient(h.opts), pokes: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go d.run()
	return d
}

// poke wakes the dispatcher: new deliveries are due.
func (d *dispatcher) poke() {
	select {
	case d.pokes <- struct{}{}:
	default:
	}
}

// close stops the dispatcher and cuts off attempts under way; they are
// not recorded, so the next process makes them again.
func (d *dispatcher) close() {
	d.cancel()
	<-d.done
}

func (d *dispatcher) run() {
	defer close(d.done)
	inflight := map[string]bool{}
	finished := make(chan string, d.h.opts.Workers)
	timer := time.NewTimer(idlePoll)
	defer timer.Stop()
	for {
		// One now for both queries: a delivery that falls due between
		// them is then either started or the one the timer waits for.
		now := d.h.opts.Now()
		d.start(now, inflight, finished)
		// Due deliveries not started wait for a free worker (finished);
		// the timer is for those due later.
		wait := idlePoll
		if next, err := d.h.st.NextDelivery(d.ctx, now); err != nil {
			if d.ctx.Err() == nil {
				d.h.log.Error("next webhook delivery", "err", err)
			}
		} else if !next.IsZero() {
			wait = max(min(wait, next.Sub(now)), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-d.ctx.Done():
			d.wg.Wait()
			return
		case id := <-finished:
			delete(inflight, id)
		case <-d.pokes:
		case <-timer.C:
		}
	}
}

// start begins the due deliveries that are not under way, as far as
// workers are free.
func (d *dispatcher) start(now time.Time, inflight map[string]bool, finished chan<- string) {
	free := d.h.opts.Workers - len(inflight)
	if free <= 0 {
		return
	}
	due, err := d.h.st.DueDeliveries(d.ctx, now, len(inflight)+free)
	if err != nil {
		if d.ctx.Err() == nil {
			d.h.log.Error("due webhook deliveries", "err", err)
		}
		return
	}
	for _, dl := range due {
		if free == 0 {
			return
		}
		if inflight[dl.ID] {
			continue
		}
		inflight[dl.ID] = true
		free--
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.attempt(dl)
			finished <- dl.ID
		}()
	}
}

// attempt makes one try at dl and records it with dl's next state.
func (d *dispatcher) attempt(dl eventrec.Delivery) {
	o := d.h.opts
	n := dl.Attempts + 1
	start := o.Now()
	status, msg, permanent := d.send(dl, n)
	if d.ctx.Err() != nil {
		return // shutting down: not an answer of the receiver's
	}
	now := o.Now()
	a := eventrec.DeliveryAttempt{N: n, Time: start, Status: status, Error: msg, DurationMS: float64(now.Sub(start).Microseconds()) / 1000}
	next := dl
	next.Webhook, next.Event = eventrec.Webhook{}, eventrec.Event{}
	next.Attempts, next.LastStatus, next.LastError = n, status, msg
	delay := d.backoff(n)
	switch {
	case msg == "":
		next.State, next.NextAt, next.EndedAt = eventrec.DeliveryDelivered, time.Time{}, now
	case permanent || now.Add(delay).After(dl.CreatedAt.Add(o.RetryFor)):
		next.State, next.NextAt, next.EndedAt = eventrec.DeliveryFailed, time.Time{}, now
		d.h.log.Warn("webhook delivery given up", "webhook", dl.WebhookID, "delivery", dl.ID, "attempts", n, "err", msg)
	default:
		next.NextAt = now.Add(delay)
	}
	if err := d.h.st.RecordAttempt(context.Background(), next, a); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		// ErrNotFound: the webhook was deleted meanwhile.
		d.h.log.Error("record webhook attempt", "webhook", dl.WebhookID, "delivery", dl.ID, "err", err)
	}
}

// backoff is the delay after failed attempt n: RetryBase doubled n-1
// times, at most RetryMaxDelay, less up to a fifth at random so that
// receivers that failed together are not all retried together.
func (d *dispatcher) backoff(n int) time.Duration {
	o := d.h.opts
	delay := o.RetryMaxDelay
	if n-1 < 40 {
		delay = min(o.RetryBase<<(n-1), o.RetryMaxDelay)
	}
	return delay - time.Duration(rand.Int64N(int64(delay)/5+1))
}

// send posts dl's event to its webhook. It returns the status that came
// back and, unless the receiver took it (2xx), why the attempt failed and
// whether trying again is pointless.
func (d *dispatcher) send(dl eventrec.Delivery, n int) (status int, msg string, permanent bool) {
	o := d.h.opts
	if o.Box == nil {
		return 0, "the server has no master key to open the webhook's secret", true
	}
	secret, err := o.Box.Open(dl.Webhook.Sealed, webhookAD(dl.TenantID, dl.WebhookID))
	if err != nil {
		// Only a changed master key or database does this.
		return 0, "the webhook's secret does not open with this server's master key", true
	}
	body, err := json.Marshal(fromStore(dl.Event))
	if err != nil {
		return 0, fmt.Sprintf("encode event %d: %v", dl.EventID, err), true
	}
	ctx, cancel := context.WithTimeout(d.ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dl.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err.Error(), true
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "airlock-webhooks/1")
	req.Header.Set(HeaderDeliveryID, dl.ID)
	req.Header.Set(HeaderAttempt, strconv.Itoa(n))
	req.Header.Set(HeaderEventID, strconv.FormatInt(dl.EventID, 10))
	req.Header.Set(HeaderEventType, dl.EventType)
	req.Header.Set(HeaderSignature, Sign(secret, o.Now(), body))
	resp, err := d.hc.Do(req)
	if err != nil {
		return 0, describe(err, o.Timeout), false
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	switch {
	case resp.StatusCode/100 == 2:
		return resp.StatusCode, "", false
	case resp.StatusCode/100 == 3:
		return resp.StatusCode, fmt.Sprintf("HTTP %d: redirects are not followed (Location %q)",
			resp.StatusCode, excerpt([]byte(resp.Header.Get("Location")))), false
	}
	msg = fmt.Sprintf("HTTP %d", resp.StatusCode)
	if e := excerpt(answer); e != "" {
		msg += ": " + e
	}
	return resp.StatusCode, msg, false
}

// describe says why no answer came, without the URL (the caller knows it).
func describe(err error, timeout time.Duration) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Sprintf("no answer within %v", timeout)
		}
		err = ue.Err
	}
	return err.Error()
}

// excerpt is the start of a receiver's answer as printable text.
func excerpt(b []byte) string {
	if len(b) > maxExcerpt {
		b = b[:maxExcerpt]
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == utf8.RuneError || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}
