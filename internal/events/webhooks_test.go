package events

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/store/teststore"
)

func TestCreateWebhookRefuses(t *testing.T) {
	st := teststore.Open(t)
	h := newHub(t, st, Options{Box: testBox(t), MaxWebhooks: 2})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  WebhookRequest
		want string // in the message
	}{
		{"no url", WebhookRequest{Events: []string{"*"}}, `"url" is required`},
		{"ftp", WebhookRequest{URL: "ftp://example.com/x", Events: []string{"*"}}, "want an http or https URL"},
		{"relative", WebhookRequest{URL: "/hook", Events: []string{"*"}}, "want an http or https URL"},
		{"no host", WebhookRequest{URL: "https:///x", Events: []string{"*"}}, "no host"},
		{"credentials", WebhookRequest{URL: "https://u:p@example.com/", Events: []string{"*"}}, "credentials"},
		{"fragment", WebhookRequest{URL: "https://example.com/#x", Events: []string{"*"}}, "fragment"},
		{"bad port", WebhookRequest{URL: "https://example.com:99999/", Events: []string{"*"}}, "port"},
		{"loopback", WebhookRequest{URL: "http://127.0.0.1:8080/", Events: []string{"*"}}, "loopback address"},
		{"loopback v6", WebhookRequest{URL: "http://[::1]/", Events: []string{"*"}}, "loopback address"},
		{"mapped v6", WebhookRequest{URL: "http://[::ffff:10.0.0.1]/", Events: []string{"*"}}, "private address"},
		{"metadata", WebhookRequest{URL: "http://169.254.169.254/latest", Events: []string{"*"}}, "metadata address"},
		{"private", WebhookRequest{URL: "https://192.168.1.10/", Events: []string{"*"}}, "private address"},
		{"localhost", WebhookRequest{URL: "http://LocalHost./", Events: []string{"*"}}, "is this host"},
		{"no events", WebhookRequest{URL: "https://example.com/"}, `"events" is empty`},
		{"unknown event", WebhookRequest{URL: "https://example.com/", Events: []string{"exec.output"}}, `unknown event type "exec.output"`},
		{"unknown after star", WebhookRequest{URL: "https://example.com/", Events: []string{"*", "nope"}}, `unknown event type "nope"`},
		{"short secret", WebhookRequest{URL: "https://example.com/", Events: []string{"*"}, Secret: "short"}, `"secret" is 5 bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.CreateWebhook(ctx, "ten_a", tc.req)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
	if list, _ := h.ListWebhooks(ctx, "ten_a"); len(list) != 0 {
		t.Errorf("refused requests left webhooks: %+v", list)
	}

	// Types are deduplicated; "*" stands alone; a secret is made when none
	// is given.
	w, err := h.CreateWebhook(ctx, "ten_a", WebhookRequest{URL: "https://example.com/a",
		Events: []string{"sandbox.created", "exec.exited", "sandbox.created"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"sandbox.created", "exec.exited"}, w.Events); d != "" || !strings.HasPrefix(w.Secret, "whsec_") || len(w.Secret) < 40 {
		t.Errorf("events (-want +got):\n%s secret %q", d, w.Secret)
	}
	w, err = h.CreateWebhook(ctx, "ten_a", WebhookRequest{URL: "https://example.com/b", Events: []string{"exec.exited", "*"}})
	if err != nil || len(w.Events) != 1 || w.Events[0] != "*" {
		t.Errorf("star: %+v, %v", w, err)
	}
	if _, err := h.CreateWebhook(ctx, "ten_a", WebhookRequest{URL: "https://example.com/c", Events: []string{"*"}}); !errors.Is(err, ErrLimitExceeded) {
		t.Errorf("third webhook: %v, want ErrLimitExceeded", err)
	}
	if _, err := h.CreateWebhook(ctx, "ten_b", WebhookRequest{URL: "https://example.com/c", Events: []string{"*"}}); err != nil {
		t.Errorf("another tenant's first webhook: %v", err)
	}
}

func TestCreateWebhookWithoutBox(t *testing.T) {
	st := teststore.Open(t)
	h := newHub(t, st, Options{})
	_, err := h.CreateWebhook(context.Background(), "ten_a", WebhookRequest{URL: "https://example.com/", Events: []string{"*"}})
	if !errors.Is(err, ErrDisabled) {
		t.Errorf("err %v, want ErrDisabled", err)
	}
}

func TestCheckURLAllowPrivate(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:9/x", "http://localhost/", "http://[fe80::1]/"} {
		if _, err := CheckURL(u, true); err != nil {
			t.Errorf("%s with AllowPrivate: %v", u, err)
		}
	}
}

// FuzzCheckURL: whatever comes in, an accepted URL is http(s) with a host,
// no credentials and no fragment, and checks the same again.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/hook?a=1", "http://u@x/", "http://[::1]:80/", "https://example.com:0/",
		"http://%31%32%37.0.0.1/", "http://0x7f.1/", "javascript:alert(1)", "http://exa mple.com/", "https://例え.jp/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out, err := CheckURL(raw, false)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: error %v is not ErrInvalid", raw, err)
			}
			return
		}
		u, perr := url.Parse(out)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
			t.Fatalf("%q accepted as %q", raw, out)
		}
		if again, err := CheckURL(out, false); err != nil || again != out {
			t.Fatalf("%q -> %q -> %q, %v", raw, out, again, err)
		}
	})
}
