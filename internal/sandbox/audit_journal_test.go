package sandbox

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/teststore"
)

// TestAuditJournalReplay: a daemon killed after it linked events but
// before its batch reached the store left them in the journal; the next
// one stores those the store lacks (not those it has: the chain would
// break), empties the journal, and the chain verifies.
func TestAuditJournalReplay(t *testing.T) {
	dir := t.TempDir()
	st := teststore.Open(t)
	ctx := context.Background()
	var chain []audit.Event
	prev := &audit.Event{}
	for i := range 5 {
		e := audit.Event{Time: time.Now().UTC(), Sandbox: "sb-j", Tenant: "t", Actor: "k", Type: audit.ExecStarted, Data: json.RawMessage(`{"i":` + string(rune('0'+i)) + `}`)}
		if err := audit.Link(prev, &e); err != nil {
			t.Fatal(err)
		}
		chain = append(chain, e)
		prev = &chain[len(chain)-1]
	}
	// The store got the first two; the journal holds the last four (one
	// of them stored already, between the write and the emptying).
	if err := st.AppendAudit(ctx, chain[:2]); err != nil {
		t.Fatal(err)
	}
	var lines []byte
	for _, e := range chain[1:] {
		b, _ := json.Marshal(e)
		lines = append(append(lines, b...), '\n')
	}
	lines = append(lines, `{"seq":6,"sandbox":"sb-j","ty`...) // cut by the kill
	if err := os.WriteFile(filepath.Join(dir, auditJournalFile), lines, 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := openAuditJournal(ctx, dir, st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	got, err := st.AuditEvents(ctx, "sb-j", store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("the store holds %d events after the replay, want 5", len(got))
	}
	if res := audit.Verify(got); !res.OK {
		t.Errorf("chain after the replay: %+v", res)
	}
	if fi, err := os.Stat(filepath.Join(dir, auditJournalFile)); err != nil || fi.Size() != 0 {
		t.Errorf("the journal after the replay: %v, %v", fi.Size(), err)
	}
	// Appended and stored, the journal empties itself.
	j.add(chain[0])
	if fi, _ := os.Stat(filepath.Join(dir, auditJournalFile)); fi.Size() == 0 {
		t.Error("an added event is not in the journal")
	}
	j.stored(1)
	if fi, _ := os.Stat(filepath.Join(dir, auditJournalFile)); fi.Size() != 0 || !j.durable() {
		t.Errorf("after its event was stored the journal holds %d bytes (durable %v)", fi.Size(), j.durable())
	}
}
