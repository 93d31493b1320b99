package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/client"
)

// eventStream follows a tenant's events with the client in the background.
type eventStream struct {
	got    chan client.Event
	cancel context.CancelFunc
	done   chan struct{}
}

func followEvents(t *testing.T, c *client.Client, opts client.EventsOptions) *eventStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &eventStream{got: make(chan client.Event, 100), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		c.Events(ctx, opts, func(e client.Event) error {
			s.got <- e
			return nil
		})
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *eventStream) stop() {
	s.cancel()
	<-s.done
}

// until collects events until one of type typ for sandbox id comes.
func (s *eventStream) until(t *testing.T, typ, id string) []client.Event {
	t.Helper()
	var out []client.Event
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e := <-s.got:
			out = append(out, e)
			if e.Type == typ && e.SandboxID == id {
				return out
			}
		case <-timeout:
			t.Fatalf("no %s of %s; got %+v", typ, id, out)
		}
	}
}

type evBrief struct{ Type, Sandbox string }

func briefEvents(evs []client.Event) []evBrief {
	var out []evBrief
	for _, e := range evs {
		out = append(out, evBrief{e.Type, e.SandboxID})
	}
	return out
}

// The real daemon: lifecycle and exec-exit events reach the tenant's
// stream and its webhook, signed, and nothing of another tenant's; a
// client resumes after the last id it saw across a daemon restart.
func TestEventsAndWebhooks(t *testing.T) {
	s := startServer(t, "", "--webhooks-allow-private")
	admin := s.admin()
	for _, name := range []string{"ev-a", "ev-b"} {
		must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: name}))
	}
	keyA := must[client.NewKey](t)(admin.CreateKey(ctx, "ev-a", "a")).Key
	keyB := must[client.NewKey](t)(admin.CreateKey(ctx, "ev-b", "b")).Key
	a, b := client.New(s.url, keyA), client.New(s.url, keyB)

	var mu sync.Mutex
	type delivery struct {
		header http.Header
		body   []byte
	}
	var got []delivery
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, delivery{r.Header.Clone(), body})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	const secret = "e2e-webhook-secret-0123456789"
	hook := must[client.Webhook](t)(a.CreateWebhook(ctx, client.WebhookRequest{URL: recv.URL, Events: []string{"*"}, Secret: secret}))

	// Both tenants' streams replay from the start: nothing can slip by
	// before they are live.
	sa := followEvents(t, a, client.EventsOptions{FromStart: true})
	sb := followEvents(t, b, client.EventsOptions{FromStart: true})

	idA := must[client.Sandbox](t)(a.CreateSandbox(ctx, client.CreateRequest{})).ID
	res := must[client.ExecResult](t)(a.Exec(ctx, idA, client.ExecRequest{Command: "exit 3"}))
	if res.ExitCode != 3 {
		t.Fatalf("exit code %d", res.ExitCode)
	}
	idB := must[client.Sandbox](t)(b.CreateSandbox(ctx, client.CreateRequest{})).ID
	if err := b.DeleteSandbox(ctx, idB); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteSandbox(ctx, idA); err != nil {
		t.Fatal(err)
	}

	evA := sa.until(t, client.EventSandboxDestroyed, idA)
	want := []evBrief{{client.EventSandboxCreated, idA}, {client.EventExecExited, idA}, {client.EventSandboxDestroyed, idA}}
	if d := cmp.Diff(want, briefEvents(evA)); d != "" {
		t.Errorf("tenant a's stream (-want +got):\n%s", d)
	}
	var exited struct {
		ExitCode int `json:"exit_code"`
	}
	if json.Unmarshal(evA[1].Data, &exited); exited.ExitCode != 3 {
		t.Errorf("exec.exited data %s", evA[1].Data)
	}
	for i := 1; i < len(evA); i++ {
		if evA[i].ID <= evA[i-1].ID {
			t.Errorf("ids do not ascend: %d then %d", evA[i-1].ID, evA[i].ID)
		}
	}
	evB := sb.until(t, client.EventSandboxDestroyed, idB)
	if d := cmp.Diff([]evBrief{{client.EventSandboxCreated, idB}, {client.EventSandboxDestroyed, idB}}, briefEvents(evB)); d != "" {
		t.Errorf("tenant b's stream (-want +got):\n%s", d)
	}

	// The webhook: the same three events, each signed.
	var list []client.WebhookDelivery
	deadline := time.Now().Add(30 * time.Second)
	for {
		list = must[[]client.WebhookDelivery](t)(a.WebhookDeliveries(ctx, hook.ID, 0, 10))
		if len(list) == 3 && !slices.ContainsFunc(list, func(d client.WebhookDelivery) bool { return d.State != "delivered" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries %+v", list)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	var delivered []evBrief
	for _, d := range got {
		if err := client.VerifyWebhook(secret, d.header.Get("Airlock-Signature"), d.body, 0, time.Now()); err != nil {
			t.Errorf("delivery %s: %v", d.body, err)
		}
		var e client.Event
		json.Unmarshal(d.body, &e)
		delivered = append(delivered, evBrief{e.Type, e.SandboxID})
	}
	mu.Unlock()
	less := func(x, y evBrief) int {
		return strings.Compare(x.Type, y.Type)
	}
	slices.SortFunc(delivered, less)
	slices.SortFunc(want, less)
	if d := cmp.Diff(want, delivered); d != "" {
		t.Errorf("delivered (-want +got):\n%s", d)
	}

	// Restart; a client that saw only the create resumes after it and
	// gets exactly what followed.
	sa.stop()
	s.stop()
	s.start()
	a = client.New(s.url, keyA)
	resumed := followEvents(t, a, client.EventsOptions{After: evA[0].ID})
	rest := resumed.until(t, client.EventSandboxDestroyed, idA)
	if d := cmp.Diff(briefEvents(evA[1:]), briefEvents(rest)); d != "" {
		t.Errorf("resumed after %d (-want +got):\n%s", evA[0].ID, d)
	}
	if rest[0].ID != evA[1].ID {
		t.Errorf("resumed at id %d, want %s", rest[0].ID, strconv.FormatInt(evA[1].ID, 10))
	}
}
