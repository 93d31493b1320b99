package api

import (
	"errors"
	"net/http"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/cast"
	"github.com/airlockhq/airlock/internal/store"
)

// castType is the media type of an asciicast file.
const castType = "application/x-asciicast"

// sessionCast answers a session's terminal recording, read from the
// audit log, so it outlives the session and the sandbox.
func (s *server) sessionCast(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r, nil); err != nil {
		s.fail(w, r, err)
		return
	}
	sid := r.PathValue("sid")
	events, err := s.castEvents(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := cast.Session(events, sid)
	if errors.Is(err, cast.ErrNotFound) {
		err = errf(http.StatusNotFound, codeNotFound, "session %q is not in the audit log of sandbox %s", sid, r.PathValue("id"))
	}
	s.writeCast(w, r, c, err)
}

// auditCast answers the recording of one command (?exec=ID) or of the
// whole sandbox.
func (s *server) auditCast(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r, []string{"exec"}); err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	execID := q.Get("exec")
	if q.Has("exec") && (execID == "" || len(execID) > 128) {
		s.fail(w, r, invalidf("query parameter exec=%q: want an exec id, or no exec for the whole sandbox", execID))
		return
	}
	events, err := s.castEvents(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var c *cast.Cast
	if execID == "" {
		c, err = cast.Sandbox(events)
	} else {
		c, err = cast.Exec(events, execID)
	}
	if errors.Is(err, cast.ErrNotFound) {
		err = errf(http.StatusNotFound, codeNotFound, "exec %q is not in the audit log of sandbox %s", execID, r.PathValue("id"))
	}
	s.writeCast(w, r, c, err)
}

// castEvents reads the events casts are made of from the log of the
// sandbox {id}.
func (s *server) castEvents(r *http.Request) ([]audit.Event, error) {
	var events []audit.Event
	err := s.m.AuditLog(r.Context(), callerOf(r), r.PathValue("id"), store.AuditFilter{Types: cast.Types()}, func(e audit.Event) error {
		events = append(events, e)
		return nil
	})
	return events, err
}

// writeCast answers c, or err. A log that does not decode is an internal
// error: the service wrote it.
func (s *server) writeCast(w http.ResponseWriter, r *http.Request, c *cast.Cast, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", castType)
	if _, err := c.WriteTo(w); err != nil {
		s.log.Debug("write cast", "sandbox", r.PathValue("id"), "err", err)
	}
}
