package sandbox

import (
	"context"
	"encoding/json"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/live"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/store"
)

// The recorders internal/live records its work through: live says what
// happened; the events, and what they carry, are made here.

var (
	_ live.Recorder         = liveRecorder{}
	_ live.CommandRecorder  = (*execRecord)(nil)
	_ live.SessionRecorder  = sessionRecorder{}
	_ live.TerminalRecorder = terminalRecorder{}
	_ live.Log              = adoptLog{}
)

// liveRecorder records the live work of r's actor in r's sandbox.
type liveRecorder struct {
	s *Service
	r auditor
}

func (l liveRecorder) Session(sid string) live.SessionRecorder {
	out := l.r.outRecorder(audit.SessionOutput, l.s.scrubber(l.r.sandbox), map[string]any{"session_id": sid})
	return sessionRecorder{outRecorder: out, r: l.r, sid: sid}
}

func (l liveRecorder) Command(execID string) live.CommandRecorder {
	return l.s.resumeExecRecord(l.r, execID)
}

// terminalRecorder records what one client attached to session sid's
// terminal types, and its resizes.
func (s *Service) terminalRecorder(r auditor, sid string) terminalRecorder {
	in := r.outRecorder(audit.SessionInput, s.scrubber(r.sandbox), map[string]any{"session_id": sid})
	return terminalRecorder{outRecorder: in, r: r, sid: sid}
}

// sessionRecorder records a session's start and end, and (outRecorder)
// what its terminal shows.
type sessionRecorder struct {
	*outRecorder
	r   auditor
	sid string
}

func (e sessionRecorder) Actor() string { return e.r.actor }

func (e sessionRecorder) Created(in live.SessionInfo) {
	e.r.record(audit.SessionCreated, map[string]any{"session_id": e.sid, "mode": in.Mode, "shell": in.Shell, "cols": in.Cols, "rows": in.Rows})
}

func (e sessionRecorder) Ended(st runtime.ExitStatus, err error) {
	if err != nil {
		e.r.record(audit.SessionEnded, map[string]any{"session_id": e.sid, "error": err.Error()})
		return
	}
	e.r.record(audit.SessionEnded, map[string]any{"session_id": e.sid, "exit_code": st.Code, "signal": st.Signal})
}

// terminalRecorder records, for one attached client, what it types
// (outRecorder) and its resizes.
type terminalRecorder struct {
	*outRecorder
	r   auditor
	sid string
}

func (t terminalRecorder) Resized(cols, rows uint16) {
	t.r.record(audit.SessionResized, map[string]any{"session_id": t.sid, "cols": cols, "rows": rows})
}

// adoptLog is a re-attached sandbox's audit log, for the live work of an
// earlier daemon to go on recording in.
type adoptLog struct {
	s   *Service
	rec sandboxrec.Sandbox
}

func (a adoptLog) As(actor string) live.Recorder {
	return liveRecorder{a.s, auditor{a: a.s.audit, sandbox: a.rec.ID, tenant: a.rec.TenantID, actor: actor}}
}

func (a adoptLog) CommandOutput(ctx context.Context) map[string]int64 {
	return a.s.auditedOutput(ctx, a.rec.ID, audit.ExecOutput, "exec_id")
}

func (a adoptLog) SessionOutput(ctx context.Context) map[string]int64 {
	return a.s.auditedOutput(ctx, a.rec.ID, audit.SessionOutput, "session_id")
}

// auditedOutput is, per command or session (the value of field key in
// events of type typ) of sandbox id, the offset in its output after what
// its log holds (the "end" of its newest piece).
func (s *Service) auditedOutput(ctx context.Context, id, typ, key string) map[string]int64 {
	out := map[string]int64{}
	events, err := s.st.AuditEvents(ctx, id, store.AuditFilter{Types: []string{typ}})
	if err != nil {
		s.log.Warn("reconcile: read the recorded output", "sandbox", id, "err", err)
		return out
	}
	for _, e := range events {
		var d map[string]any
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		k, _ := d[key].(string)
		if end, ok := d["end"].(float64); ok && int64(end) > out[k] {
			out[k] = int64(end)
		}
	}
	return out
}

// resumeExecRecord is the recorder of a command whose start an earlier
// daemon recorded.
func (s *Service) resumeExecRecord(r auditor, execID string) *execRecord {
	sc := s.scrubber(r.sandbox)
	return &execRecord{r: r, id: execID,
		out: r.outRecorder(audit.ExecOutput, sc, map[string]any{"exec_id": execID, "stream": "stdout"}),
		err: r.outRecorder(audit.ExecOutput, sc, map[string]any{"exec_id": execID, "stream": "stderr"}),
	}
}
