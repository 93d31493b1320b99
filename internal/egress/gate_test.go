package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestModelGate(t *testing.T) {
	up := newModelUpstream(okJSON(chatJSON))
	up.step = nil
	e := newMitmEnv(t, mitmOptions{upstream: up})
	e.setSecrets(e.keyBinding())
	c := e.client(e.sandboxRoots())
	var calls atomic.Int32
	const msg = `tenant budget of $5.00 spent ("daily")`
	e.sb.SetModelGate(func() error {
		calls.Add(1)
		return errors.New(msg)
	})
	post := func(path string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, e.url(mitmBound, path), strings.NewReader(`{"model":"m","input":"`+strings.Repeat("x", 100<<10)+`"}`))
		req.Header.Set("Authorization", "Bearer "+mitmPhKey)
		return req
	}
	const quoted = `tenant budget of $5.00 spent (\"daily\")`
	for i, tt := range []struct{ path, body string }{
		{"/v1/responses", `{"error":{"message":"` + quoted + `","type":"budget_exceeded","code":"budget_exceeded"}}`},
		{"/v1/chat/completions", `{"error":{"message":"` + quoted + `","type":"budget_exceeded","code":"budget_exceeded"}}`},
		{"/v1/messages", `{"type":"error","error":{"type":"budget_exceeded","message":"` + quoted + `"}}`},
		{"/v1beta/models/gemini-2.5-pro:streamGenerateContent", `{"error":{"code":429,"message":"` + quoted + `","status":"RESOURCE_EXHAUSTED"}}`},
	} {
		var reused bool
		req := post(tt.path)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}))
		resp, body := mitmDo(t, c, req)
		got := []string{resp.Status, resp.Header.Get("Content-Type"), resp.Header.Get("X-Airlock-Egress"),
			resp.Header.Get("X-Should-Retry"), resp.Header.Get("Retry-After"), body}
		want := []string{"429 Too Many Requests", "application/json", "budget", "false", "", tt.body}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: answer (-want +got):\n%s", tt.path, diff)
		}
		if i > 0 && !reused {
			t.Errorf("%s: the tunnel did not stay open after a refused call", tt.path)
		}
	}
	e.waitKind(KindModelBudget, 4)
	evs := kindEvents(e.events.all(), KindModelBudget)
	if len(evs) != 4 {
		t.Fatalf("%d budget events, want 4: %+v", len(evs), e.events.all())
	}
	for _, ev := range evs {
		want := mitmEv{KindModelBudget, "API_KEY", "https", mitmBound, e.tlsPort, Denied, msg, 429}
		if diff := cmp.Diff(want, mitmSummary(ev)); diff != "" {
			t.Errorf("budget event (-want +got):\n%s", diff)
		}
	}
	if n := len(up.seen()); n != 0 || calls.Load() != 4 {
		t.Errorf("refused calls reached the upstream %d times; the gate was asked %d times, want 4", n, calls.Load())
	}

	// What is no model call passes a closed gate, without asking it.
	if resp, _ := mitmDo(t, c, mitmGet(t, e.url(mitmBound, "/v1/models"), "Authorization", "Bearer "+mitmPhKey)); resp.StatusCode != 200 {
		t.Errorf("GET /v1/models with the gate closed: %s", resp.Status)
	}
	if resp, _ := mitmDo(t, c, post("/v1/messages/count_tokens")); resp.StatusCode != 200 {
		t.Errorf("count_tokens with the gate closed: %s", resp.Status)
	}
	if calls.Load() != 4 {
		t.Errorf("the gate was asked about calls that are no model calls")
	}

	// An open gate, then none: the calls go through and are metered.
	e.sb.SetModelGate(func() error { calls.Add(1); return nil })
	if resp, _ := mitmDo(t, c, post("/v1/chat/completions")); resp.StatusCode != 200 || calls.Load() != 5 {
		t.Errorf("open gate: %s, asked %d times", resp.Status, calls.Load())
	}
	e.sb.SetModelGate(nil)
	if resp, _ := mitmDo(t, c, post("/v1/chat/completions")); resp.StatusCode != 200 || calls.Load() != 5 {
		t.Errorf("no gate: %s, asked %d times", resp.Status, calls.Load())
	}
	if n := len(up.seen()); n != 4 {
		t.Errorf("the upstream saw %d requests, want 4", n)
	}
	e.waitRequests(4) // the refused calls' events are their budget events
	if n := len(kindEvents(e.events.all(), KindModelUsage)); n != 2 {
		t.Errorf("%d usage events, want 2 (the calls that went through)", n)
	}
}

// TestModelGateExpectContinue: a client that waits for 100 Continue gets
// the refusal instead, and the tunnel ends rather than wait for a body.
func TestModelGateExpectContinue(t *testing.T) {
	up := newModelUpstream(okJSON(chatJSON))
	e := newMitmEnv(t, mitmOptions{upstream: up})
	e.setSecrets(e.keyBinding())
	e.sb.SetModelGate(func() error { return errors.New("spent") })
	tc := e.tunnel(mitmBound)
	fmt.Fprintf(tc, "POST /v1/messages HTTP/1.1\r\nHost: %s\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n", e.hostPort(mitmBound))
	tc.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(tc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || !resp.Close || string(body) != `{"type":"error","error":{"type":"budget_exceeded","message":"spent"}}` {
		t.Errorf("answer %s close=%v %q", resp.Status, resp.Close, body)
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("after the refusal: %d bytes, %v; want the tunnel closed", n, err)
	}
}
