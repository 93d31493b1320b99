package api

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/cast"
	"github.com/airlockhq/airlock/internal/store"
)

// auditFilter reads GET .../audit's query: type (comma-separated), from
// and to (RFC 3339), after (a sequence number) and limit.
func auditFilter(r *http.Request) (store.AuditFilter, error) {
	var f store.AuditFilter
	if err := checkQuery(r, []string{"type", "from", "to", "after", "limit"}); err != nil {
		return f, err
	}
	q := r.URL.Query()
	if v := q.Get("type"); v != "" {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t == "" || len(t) > 64 {
				return f, invalidf("query parameter type=%q: want event types separated by commas", v)
			}
			f.Types = append(f.Types, t)
		}
	}
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return f, invalidf("query parameter %s=%q: want an RFC 3339 time", p.name, v)
			}
			*p.t = t
		}
	}
	for _, p := range []struct {
		name string
		n    *int64
	}{{"after", &f.AfterSeq}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return f, invalidf("query parameter %s=%q: want a sequence number (0 or more)", p.name, v)
			}
			*p.n = n
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100000 {
			return f, invalidf("query parameter limit=%q: want 1 to 100000", v)
		}
		f.Limit = n
	}
	return f, nil
}

// auditLog streams a sandbox's audit events as JSON lines.
func (s *server) auditLog(w http.ResponseWriter, r *http.Request) {
	f, err := auditFilter(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, id := callerOf(r), r.PathValue("id")
	var bw *bufio.Writer
	var enc *json.Encoder
	err = s.m.AuditLog(r.Context(), c, id, f, func(e audit.Event) error {
		if bw == nil {
			w.Header().Set("Content-Type", "application/x-ndjson")
			bw = bufio.NewWriterSize(w, 32<<10)
			enc = json.NewEncoder(bw)
		}
		return enc.Encode(e)
	})
	if bw == nil {
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		return
	}
	if err != nil {
		s.log.Error("audit log stream failed", "sandbox", id, "err", err)
	}
	bw.Flush()
}

// verifyAudit checks a sandbox's audit log.
func (s *server) verifyAudit(w http.ResponseWriter, r *http.Request) {
	res, err := s.m.VerifyAudit(r.Context(), callerOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// exportAudit answers the sandbox's whole log as one gzipped tar:
// manifest.json, events.jsonl and a cast of every session and command,
// which `airlock audit verify FILE` checks offline.
func (s *server) exportAudit(w http.ResponseWriter, r *http.Request) {
	c, id := callerOf(r), r.PathValue("id")
	var events []audit.Event
	err := s.m.AuditLog(r.Context(), c, id, store.AuditFilter{}, func(e audit.Event) error {
		events = append(events, e)
		return nil
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	casts := map[string][]byte{}
	for _, e := range events {
		var f struct {
			ExecID    string `json:"exec_id"`
			SessionID string `json:"session_id"`
		}
		var cs *cast.Cast
		var name string
		switch e.Type {
		case audit.SessionCreated:
			if json.Unmarshal(e.Data, &f) == nil && f.SessionID != "" {
				name = "casts/" + f.SessionID + ".cast"
				cs, err = cast.Session(events, f.SessionID)
			}
		case audit.ExecStarted:
			if json.Unmarshal(e.Data, &f) == nil && f.ExecID != "" && f.SessionID == "" {
				name = "casts/" + f.ExecID + ".cast"
				cs, err = cast.Exec(events, f.ExecID)
			}
		}
		if cs == nil || err != nil {
			continue
		}
		var b bytes.Buffer
		if _, err := cs.WriteTo(&b); err == nil {
			casts[name] = b.Bytes()
		}
	}
	var buf bytes.Buffer
	m := audit.Manifest{Sandbox: id, Tenant: c.TenantID, ExportedAt: s.now().UTC()}
	err = audit.WriteArchive(&buf, m, s.signer, func(f func(audit.Event) error) error {
		for _, e := range events {
			if err := f(e); err != nil {
				return err
			}
		}
		return nil
	}, casts)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", `attachment; filename="`+id+`-audit.tar.gz"`)
	w.Write(buf.Bytes())
}

// auditKey answers the public key that signs this server's audit exports,
// for `airlock audit verify --key` on another machine.
func (s *server) auditKey(w http.ResponseWriter, r *http.Request) {
	if s.signer == nil {
		s.fail(w, r, errf(http.StatusNotFound, codeNotFound, "this server does not sign audit exports"))
		return
	}
	pub := s.signer.Public().(ed25519.PublicKey)
	writeJSON(w, http.StatusOK, map[string]string{
		"alg": "ed25519", "public_key": base64.StdEncoding.EncodeToString(pub), "fingerprint": audit.Fingerprint(pub)})
}
