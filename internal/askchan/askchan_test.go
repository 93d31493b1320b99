package askchan

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// listen serves h on a fresh abstract socket of the test's own network
// namespace and points Request at it.
func listen(t *testing.T, h Handler) net.Listener {
	t.Helper()
	addr := fmt.Sprintf("@airlock-approvals-test-%d-%d", time.Now().UnixNano(), rand32())
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	old := dialAddr
	dialAddr = addr
	t.Cleanup(func() { dialAddr = old; ln.Close() })
	go Serve(ln, h)
	return ln
}

var counter atomic.Int64

func rand32() int64 { return counter.Add(1) }

func TestRequestAnswered(t *testing.T) {
	got := make(chan Ask, 1)
	listen(t, func(ctx context.Context, a Ask) Answer {
		got <- a
		return Answer{Allow: a.Text == "deploy", ID: "apr_1", Reason: "ok"}
	})
	ans, err := Request(Ask{Kind: KindCommand, Text: "deploy"})
	if err != nil || !ans.Allow || ans.ID != "apr_1" || ans.Reason != "ok" {
		t.Fatalf("answer %+v, %v", ans, err)
	}
	if a := <-got; a.Kind != KindCommand || a.Text != "deploy" {
		t.Errorf("asked %+v", a)
	}
	ans, err = Request(Ask{Kind: KindCommand, Text: "rm -rf /"})
	if err != nil || ans.Allow {
		t.Errorf("second answer %+v, %v", ans, err)
	}
}

// An answer carrying an error is an error for the asker.
func TestRequestError(t *testing.T) {
	listen(t, func(ctx context.Context, a Ask) Answer { return Answer{Error: "no approvals here"} })
	if _, err := Request(Ask{Kind: KindCommand, Text: "x"}); err == nil || err.Error() != "no approvals here" {
		t.Errorf("err %v", err)
	}
}

// An asker that hangs up ends the handler's context: the approval is
// abandoned, not left waiting.
func TestAskerHangsUp(t *testing.T) {
	ended := make(chan struct{})
	ln := listen(t, func(ctx context.Context, a Ask) Answer {
		<-ctx.Done()
		close(ended)
		return Answer{}
	})
	c, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte(`{"kind":"command","text":"wait"}` + "\n"))
	time.Sleep(50 * time.Millisecond)
	c.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context did not end when the asker hung up")
	}
}

// At most MaxAtOnce questions are open; one more is refused at once.
func TestAtMostSoMany(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var open atomic.Int64
	ln := listen(t, func(ctx context.Context, a Ask) Answer {
		open.Add(1)
		<-release
		return Answer{Allow: true}
	})
	for i := 0; i < MaxAtOnce; i++ {
		c, err := net.Dial("unix", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte(`{"kind":"command","text":"x"}` + "\n"))
	}
	for deadline := time.Now().Add(5 * time.Second); open.Load() < MaxAtOnce && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	_, err := Request(Ask{Kind: KindCommand, Text: "one more"})
	if err == nil || !strings.Contains(err.Error(), "questions are open already") {
		t.Errorf("question %d: %v", MaxAtOnce+1, err)
	}
}

// A question past MaxAsk is refused by the asker and by the channel.
func TestTooBig(t *testing.T) {
	ln := listen(t, func(ctx context.Context, a Ask) Answer { return Answer{Allow: true} })
	if _, err := Request(Ask{Kind: KindCommand, Text: strings.Repeat("x", MaxAsk)}); err == nil {
		t.Error("asker sent a question past MaxAsk")
	}
	c, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go c.Write([]byte(`{"kind":"command","text":"` + strings.Repeat("x", MaxAsk+10) + `"}` + "\n"))
	var ans Answer
	if err := readLine(bufio.NewReader(c), &ans, MaxAsk); err != nil || ans.Allow || ans.Error == "" {
		t.Errorf("channel answered %+v, %v", ans, err)
	}
}

// No channel: airlock-approve says so and exits 2, after FirstDial.
func TestNoChannel(t *testing.T) {
	old, oldWait := dialAddr, FirstDial
	dialAddr, FirstDial = "@airlock-approvals-nobody-listens", 300*time.Millisecond
	defer func() { dialAddr, FirstDial = old, oldWait }()
	var stderr bytes.Buffer
	if code := Main([]string{"deploy"}, nil, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "no approvals channel") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}

// airlock-approve exits 0 on allow and 1 on deny, saying which and why.
func TestMainExitCodes(t *testing.T) {
	listen(t, func(ctx context.Context, a Ask) Answer {
		return Answer{Allow: a.Text == "deploy now", Reason: "by key_1"}
	})
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"deploy", "now"}, 0, "allowed: by key_1"},
		{[]string{"drop the database"}, 1, "denied: by key_1"},
		{nil, 2, "usage"},
	} {
		var stderr bytes.Buffer
		if code := Main(tc.args, nil, io.Discard, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.says) {
			t.Errorf("%q: exit %d, %s", tc.args, code, stderr.String())
		}
	}
}

// A channel that breaks while a question waits (the daemon restarts) is
// asked again once it is back.
func TestRedial(t *testing.T) {
	addr := fmt.Sprintf("@airlock-approvals-redial-%d", time.Now().UnixNano())
	old := dialAddr
	dialAddr = addr
	defer func() { dialAddr = old }()
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	tl := &trackLn{Listener: ln, conns: make(chan net.Conn, 4)}
	asked := make(chan struct{}, 1)
	go Serve(tl, func(ctx context.Context, a Ask) Answer {
		asked <- struct{}{}
		<-ctx.Done()
		return Answer{}
	})
	done := make(chan Answer, 1)
	go func() {
		ans, _ := Request(Ask{Kind: KindCommand, Text: "x"})
		done <- ans
	}()
	<-asked
	ln.Close() // the first daemon goes; its connections with it
	(<-tl.conns).Close()
	time.Sleep(300 * time.Millisecond)
	ln2, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	go Serve(ln2, func(ctx context.Context, a Ask) Answer { return Answer{Allow: true, ID: "apr_2"} })
	select {
	case ans := <-done:
		if !ans.Allow || ans.ID != "apr_2" {
			t.Errorf("answer after the channel came back: %+v", ans)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the question was not asked again")
	}
}

// The MCP server: initialize, tools/list, and tools/call answering as
// Claude Code's permission prompt tool wants, the harness's own input
// back on an allow even when the person saw it cut short.
func TestMCP(t *testing.T) {
	var seen atomic.Value
	listen(t, func(ctx context.Context, a Ask) Answer {
		seen.Store(a)
		var in map[string]any
		json.Unmarshal(a.Input, &in)
		return Answer{Allow: a.Tool == "Bash" || a.Tool == "Write", Reason: "no"}
	})
	big := strings.Repeat("é", MaxInput)
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Bash","input":{"command":"echo hi"},"tool_use_id":"tu_1"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"WebFetch","input":{"url":"https://x.test"}}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"nope"}`,
	}
	var out bytes.Buffer
	if err := ServeMCP(strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, "claude"); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got[fmt.Sprint(m["id"])] = m
	}
	if v := got["1"]["result"].(map[string]any)["protocolVersion"]; v != "2025-06-18" {
		t.Errorf("initialize: %v", got["1"])
	}
	if tools := got["2"]["result"].(map[string]any)["tools"].([]any); len(tools) != 1 || tools[0].(map[string]any)["name"] != "approve" {
		t.Errorf("tools/list: %v", got["2"])
	}
	verdict := func(id string) map[string]any {
		text := got[id]["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
		var v map[string]any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatalf("call %s: %q: %v", id, text, err)
		}
		return v
	}
	if v := verdict("3"); v["behavior"] != "allow" || v["updatedInput"].(map[string]any)["command"] != "echo hi" {
		t.Errorf("allowed call: %v", v)
	}
	if v := verdict("4"); v["behavior"] != "deny" || !strings.Contains(v["message"].(string), "no") {
		t.Errorf("denied call: %v", v)
	}
	if got["5"]["error"] == nil {
		t.Errorf("unknown method: %v", got["5"])
	}

	// A Write of a large file: the person sees it cut, the harness gets
	// its whole input back.
	call := `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"approve","arguments":{"tool_name":"Write","input":{"file_path":"a","content":"` + big + `"}}}}`
	out.Reset()
	ServeMCP(strings.NewReader(call+"\n"), &out, "claude")
	got = map[string]map[string]any{}
	var m map[string]any
	json.Unmarshal(out.Bytes(), &m)
	got["6"] = m
	if v := verdict("6"); v["behavior"] != "allow" || v["updatedInput"].(map[string]any)["content"] != big {
		t.Errorf("large call: behavior %v, content kept whole: %v", v["behavior"], v["updatedInput"].(map[string]any)["content"] == big)
	}
	a := seen.Load().(Ask)
	if len(a.Input) > MaxInput || !strings.Contains(string(a.Input), "airlock_cut") || a.Harness != "claude" {
		t.Errorf("the person was shown %d bytes: %.100s", len(a.Input), a.Input)
	}
}

// trackLn hands the test each connection it accepts.
type trackLn struct {
	net.Listener
	conns chan net.Conn
}

func (l *trackLn) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.conns <- c
	}
	return c, err
}
