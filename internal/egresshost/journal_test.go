package egresshost

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
)

func testJournal(t *testing.T, path string) *journal {
	t.Helper()
	j, err := openJournal(path, slog.New(slog.DiscardHandler), time.Now, func() {})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func hosts(rs []Record) (out []string) {
	for _, r := range rs {
		out = append(out, r.Event.Host)
	}
	return out
}

// TestJournalKeepsWhatIsNotAcknowledged: events stay until acknowledged,
// across a restart, in order; a connection open at a kill is logged cut
// by the next start.
func TestJournalKeepsWhatIsNotAcknowledged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.journal")
	j := testJournal(t, path)
	for _, h := range []string{"a", "b", "c"} {
		j.add(egress.Event{Host: h, Decision: egress.Allowed})
	}
	ended := j.open(egress.Event{Host: "done", Time: time.Now().UTC()})
	ended()
	j.open(egress.Event{Host: "open", Time: time.Now().Add(-2 * time.Second).UTC(), Decision: egress.Allowed})
	if got := hosts(j.since(0)); len(got) != 3 || got[0] != "a" || got[2] != "c" {
		t.Fatalf("since 0: %v", got)
	}
	j.ack(1)
	if got := hosts(j.since(0)); len(got) != 2 || got[0] != "b" {
		t.Fatalf("after ack 1: %v", got)
	}
	// A kill: the file is all there is.
	j.close()
	j = testJournal(t, path)
	got := j.since(0)
	if len(got) != 3 || got[0].Event.Host != "b" || got[1].Event.Host != "c" || got[2].Event.Host != "open" {
		t.Fatalf("after a restart: %v", hosts(got))
	}
	cut := got[2]
	if !cut.Event.Cut || cut.Event.Reason != egress.ReasonCutCrash || cut.Event.DurationMS < 1000 || cut.Seq != 4 {
		t.Errorf("the connection left open: %+v", cut)
	}
	// Sequence numbers go on from the last one.
	j.add(egress.Event{Host: "d"})
	if all := j.since(0); all[len(all)-1].Seq != 5 {
		t.Errorf("seq after restart: %d", all[len(all)-1].Seq)
	}
	j.ack(5)
	if got := j.since(0); len(got) != 0 {
		t.Errorf("after ack of all: %v", hosts(got))
	}
	j.close()
	j = testJournal(t, path)
	if got := j.since(0); len(got) != 0 {
		t.Errorf("after a restart with all acknowledged: %v", hosts(got))
	}
	j.close()
	j = testJournal(t, path) // compacted to the acknowledgement alone
	j.add(egress.Event{Host: "e"})
	if got := j.since(0); len(got) != 1 || got[0].Seq != 6 {
		t.Errorf("seq after a compacted restart: %+v", got)
	}
}

// TestJournalTornLine: a line cut short by a kill mid-write ends the
// journal; what came before is kept.
func TestJournalTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.journal")
	j := testJournal(t, path)
	j.add(egress.Event{Host: "a"})
	j.close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"e":{"seq":2,"event":{"ho`)
	f.Close()
	j = testJournal(t, path)
	if got := hosts(j.since(0)); len(got) != 1 || got[0] != "a" {
		t.Errorf("after a torn line: %v", got)
	}
}

// TestJournalCompacts: acknowledgements past the size bound rewrite the
// file with only what is pending.
func TestJournalCompacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.journal")
	j := testJournal(t, path)
	defer j.close()
	big := string(make([]byte, 1000))
	var last int64
	for range compactAt / 1000 * 2 {
		j.add(egress.Event{Host: "h", Reason: big})
		last++
		if last%100 == 0 {
			j.ack(last - 1)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > compactAt+200<<10 {
		t.Errorf("journal of %d bytes after acknowledgements", fi.Size())
	}
	if got := j.since(0); len(got) == 0 || got[0].Seq <= last-200 {
		t.Errorf("pending after compaction: %d events from %d", len(got), got[0].Seq)
	}
}

// TestEventsWaitsAndAsks: an events call waits for something new, and
// returns at once when the questions change.
func TestEventsWaitsAndAsks(t *testing.T) {
	h, err := New(t.TempDir(), egress.Config{Logger: slog.New(slog.DiscardHandler)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	start := time.Now()
	b := h.Events(ctx, 0, 0, "", 100*time.Millisecond)
	if b.Boot == "" {
		t.Fatal("no boot")
	}
	start = time.Now()
	b = h.Events(ctx, 0, 0, b.Boot, 100*time.Millisecond)
	if len(b.Events) != 0 || time.Since(start) < 100*time.Millisecond || b.Boot == "" {
		t.Fatalf("empty journal: %+v after %s", b, time.Since(start))
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		h.j.add(egress.Event{Host: "x"})
	}()
	if b = h.Events(ctx, 0, 0, b.Boot, 10*time.Second); len(b.Events) != 1 {
		t.Fatalf("waited for an event: %+v", b)
	}
	type res struct {
		a   egress.AskAnswer
		err error
	}
	done := make(chan res, 1)
	go func() {
		a, err := h.ask(ctx, egress.AskRequest{SandboxID: "sb", Host: "q.test", Port: 443, Deadline: time.Now().Add(time.Minute)})
		done <- res{a, err}
	}()
	b = h.Events(ctx, 1, 0, b.Boot, 10*time.Second)
	if len(b.Asks) != 1 || b.Asks[0].Request.Host != "q.test" {
		t.Fatalf("the question: %+v", b)
	}
	if err := h.Answer("nope", Answer{}); err == nil {
		t.Error("an answer to no question was taken")
	}
	if err := h.Answer(b.Asks[0].ID, Answer{Allow: true, Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || !r.a.Allow || r.a.Reason != "ok" {
		t.Errorf("answer: %+v", r)
	}
	if b2 := h.Events(ctx, 1, b.AskVersion, b.Boot, 10*time.Second); len(b2.Asks) != 0 {
		t.Errorf("answered question still open: %+v", b2)
	}
}

// TestWaitAcked: a wait for an acknowledgement returns when it comes,
// and says so; without one it gives up.
func TestWaitAcked(t *testing.T) {
	j := testJournal(t, filepath.Join(t.TempDir(), "egress.journal"))
	defer j.close()
	seq := j.add(egress.Event{Host: "a"})
	if j.waitAcked(seq, 20*time.Millisecond) {
		t.Fatal("acknowledged without an ack")
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		j.ack(seq)
	}()
	if !j.waitAcked(seq, 10*time.Second) {
		t.Fatal("the ack was not seen")
	}
}

// TestBudgetGateWaitsForTheCount: a model call of a sandbox with a
// budget waits until the control plane has acknowledged the usage of the
// calls before it, and then obeys the gate put before that
// acknowledgement; without a budget it does not wait; with no
// acknowledgement it is refused.
func TestBudgetGateWaitsForTheCount(t *testing.T) {
	h, err := New(t.TempDir(), egress.Config{Logger: slog.New(slog.DiscardHandler)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	g := &gate{budget: true}
	check := h.modelGate("sb", g)
	if err := check(); err != nil {
		t.Fatalf("the first call: %v", err)
	}
	h.event(egress.Event{SandboxID: "sb", Kind: egress.KindModelUsage})
	go func() {
		time.Sleep(50 * time.Millisecond)
		g.mu.Lock()
		g.reason = "the budget is spent"
		g.mu.Unlock()
		h.j.ack(1)
	}()
	if err := check(); err == nil || err.Error() != "the budget is spent" {
		t.Errorf("the call after a counted one: %v, want the gate's refusal", err)
	}

	other := h.modelGate("other", &gate{})
	h.event(egress.Event{SandboxID: "other", Kind: egress.KindModelUsage})
	start := time.Now()
	if err := other(); err != nil || time.Since(start) > time.Second {
		t.Errorf("without a budget: %v after %s", err, time.Since(start))
	}

	budgetWait = 50 * time.Millisecond
	defer func() { budgetWait = BudgetWait }()
	h.event(egress.Event{SandboxID: "sb", Kind: egress.KindModelUsage})
	if err := check(); err == nil || !strings.Contains(err.Error(), "cannot be checked") {
		t.Errorf("with the control plane silent: %v", err)
	}
}
