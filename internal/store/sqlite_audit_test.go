package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
)

// auditChain links n events of sandbox id, one second apart from start.
func auditChain(t *testing.T, id string, start time.Time, n int) []audit.Event {
	t.Helper()
	var out []audit.Event
	var prev *audit.Event
	for i := range n {
		typ := audit.ExecStarted
		if i%2 == 1 {
			typ = audit.ExecExited
		}
		e := audit.Event{Time: start.Add(time.Duration(i) * time.Second), Sandbox: id, Tenant: "ten_1", Actor: "key_1",
			Type: typ, Data: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))}
		if err := audit.Link(prev, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		prev = &out[len(out)-1]
	}
	return out
}

func TestAuditStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	ctx := context.Background()
	if seq, hash, err := s.AuditHead(ctx, "sb_1"); seq != 0 || hash != "" || err != nil {
		t.Fatalf("head of no log: %d %q %v", seq, hash, err)
	}
	start := t0.Truncate(time.Second) // events keep microseconds
	a := auditChain(t, "sb_1", start, 10)
	b := auditChain(t, "sb_2", start, 3)
	// Two sandboxes' events in one batch, and a second batch.
	if err := s.AppendAudit(ctx, append(append([]audit.Event{}, a[:4]...), b...)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendAudit(ctx, a[4:]); err != nil {
		t.Fatal(err)
	}
	if seq, hash, err := s.AuditHead(ctx, "sb_1"); seq != 10 || hash != a[9].Hash || err != nil {
		t.Fatalf("head: %d %q %v", seq, hash, err)
	}
	// A sequence number taken twice is refused, and the batch with it.
	if err := s.AppendAudit(ctx, []audit.Event{a[9]}); !errors.Is(err, ErrConflict) {
		t.Errorf("event appended twice: %v", err)
	}
	got, err := s.AuditEvents(ctx, "sb_1", AuditFilter{})
	if err != nil || len(got) != 10 {
		t.Fatalf("events: %d, %v", len(got), err)
	}
	if r := audit.Verify(got); !r.OK {
		t.Fatalf("stored events do not verify: %+v", r)
	}
	for name, tc := range map[string]struct {
		f    AuditFilter
		seqs []int64
	}{
		"after":      {AuditFilter{AfterSeq: 7}, []int64{8, 9, 10}},
		"type":       {AuditFilter{Types: []string{audit.ExecExited}}, []int64{2, 4, 6, 8, 10}},
		"from to":    {AuditFilter{From: start.Add(2 * time.Second), To: start.Add(5 * time.Second)}, []int64{3, 4, 5}},
		"limit":      {AuditFilter{Limit: 2, AfterSeq: 1}, []int64{2, 3}},
		"two types":  {AuditFilter{Types: []string{audit.ExecExited, audit.ExecStarted}, Limit: 3}, []int64{1, 2, 3}},
		"none match": {AuditFilter{Types: []string{audit.FileRead}}, nil},
	} {
		got, err := s.AuditEvents(ctx, "sb_1", tc.f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var seqs []int64
		for _, e := range got {
			seqs = append(seqs, e.Seq)
		}
		if fmt.Sprint(seqs) != fmt.Sprint(tc.seqs) {
			t.Errorf("%s: seqs %v, want %v", name, seqs, tc.seqs)
		}
	}

	// Reopened, the log is the same.
	s.Close()
	if s, err = OpenSQLite(path); err != nil {
		t.Fatal(err)
	}
	again, err := s.AuditEvents(ctx, "sb_1", AuditFilter{})
	if err != nil || len(again) != 10 || again[9].Hash != a[9].Hash {
		t.Fatalf("after reopening: %d events, %v", len(again), err)
	}

	// Pruning takes whole logs whose newest event is older than the cut.
	n, err := s.PruneAudit(ctx, start.Add(5*time.Second))
	if err != nil || n != 1 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	if left, _ := s.AuditEvents(ctx, "sb_2", AuditFilter{}); len(left) != 0 {
		t.Errorf("sb_2's log after prune: %d events", len(left))
	}
	if seq, _, _ := s.AuditHead(ctx, "sb_2"); seq != 0 {
		t.Errorf("sb_2's head after prune: %d", seq)
	}
	if left, _ := s.AuditEvents(ctx, "sb_1", AuditFilter{}); len(left) != 10 {
		t.Errorf("sb_1's log after prune: %d events", len(left))
	}
}
