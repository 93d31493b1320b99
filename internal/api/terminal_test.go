package api

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/client"
)

func TestAttachSession(t *testing.T) {
	e := newEnvWith(t, Options{KeepAlive: 20 * time.Millisecond})
	id := e.sandbox(e.alice)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := client.New(e.srv.URL, e.alice)
	term, err := c.AttachSession(ctx, id, "ses-1")
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	read := func() string {
		t.Helper()
		b, err := term.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return string(b)
	}
	if err := term.Write(ctx, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "hello" {
		t.Errorf("echo: %q", got)
	}
	// Several pings come while this read waits; the client answers them.
	go func() {
		time.Sleep(150 * time.Millisecond)
		term.Write(ctx, []byte("later"))
	}()
	if got := read(); got != "later" {
		t.Errorf("after pings: %q", got)
	}
	if err := term.Resize(ctx, 100, 30); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "size 100 30" {
		t.Errorf("resize: %q", got)
	}
	// A bad control message is refused and the terminal stays open.
	var ce *client.Error
	if err := term.Resize(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := term.Read(ctx); !errors.As(err, &ce) || ce.Code != "invalid_argument" {
		t.Errorf("resize 0x0: %v", err)
	}
	term.Write(ctx, []byte("still"))
	if got := read(); got != "still" {
		t.Errorf("after a bad message: %q", got)
	}
	term.Write(ctx, []byte("exit"))
	var end *client.TerminalEnd
	if _, err := term.Read(ctx); !errors.As(err, &end) || !end.Exited || end.ExitCode != 3 {
		t.Errorf("exit: %v", err)
	}

	// The end of a sandbox is an explicit error, not a silent close.
	term2, err := c.AttachSession(ctx, id, "ses-1")
	if err != nil {
		t.Fatal(err)
	}
	term2.Write(ctx, []byte("gone"))
	if _, err := term2.Read(ctx); !errors.As(err, &end) || end.Exited || end.Code != "conflict" {
		t.Errorf("gone: %v", err)
	}

	// Not the owner, no such session: 404 before any upgrade.
	for _, tc := range []struct{ key, sid string }{{e.bob, "ses-1"}, {e.alice, "ses-nope"}} {
		if _, err := client.New(e.srv.URL, tc.key).AttachSession(ctx, id, tc.sid); !errors.As(err, &ce) || ce.Status != 404 {
			t.Errorf("attach %s as another: %v", tc.sid, err)
		}
	}
	// A plain GET is told it needs an upgrade, in JSON.
	e.must(call{method: "GET", path: "/v1/sandboxes/" + id + "/sessions/ses-1/attach", cred: e.alice}, http.StatusUpgradeRequired, nil)
	// A page on another origin cannot attach with the user's credentials.
	_, resp, err := websocket.Dial(ctx, e.srv.URL+"/v1/sandboxes/"+id+"/sessions/ses-1/attach", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + e.alice}, "Origin": {"https://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin attach: %v %v", err, resp)
	}
}
