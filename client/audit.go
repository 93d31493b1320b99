package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// AuditEvent is one entry of a sandbox's audit log (docs/API.md lists the
// types and their data). Hash is the SHA-256 of the event; Prev is the
// one before it's.
type AuditEvent struct {
	Seq     int64           `json:"seq"`
	Time    time.Time       `json:"time"`
	Sandbox string          `json:"sandbox"`
	Tenant  string          `json:"tenant"`
	Actor   string          `json:"actor"`
	Type    string          `json:"type"`
	Data    json.RawMessage `json:"data"`
	Prev    string          `json:"prev"`
	Hash    string          `json:"hash"`
}

// AuditQuery selects events; zero fields select everything.
type AuditQuery struct {
	Types    []string
	From, To time.Time
	After    int64 // only events with a larger seq
	Limit    int
}

// AuditVerify is what checking a log found.
type AuditVerify struct {
	OK          bool   `json:"ok"`
	Events      int64  `json:"events"`
	FirstBadSeq int64  `json:"first_bad_seq,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

func (q AuditQuery) values() url.Values {
	v := url.Values{}
	if len(q.Types) > 0 {
		v.Set("type", strings.Join(q.Types, ","))
	}
	if !q.From.IsZero() {
		v.Set("from", q.From.Format(time.RFC3339Nano))
	}
	if !q.To.IsZero() {
		v.Set("to", q.To.Format(time.RFC3339Nano))
	}
	if q.After > 0 {
		v.Set("after", strconv.FormatInt(q.After, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// AuditLog calls fn with each event of the sandbox's log that q selects,
// in order, as they arrive. An error from fn stops the reading and is
// returned.
func (c *Client) AuditLog(ctx context.Context, id string, q AuditQuery, fn func(AuditEvent) error) error {
	resp, err := c.do(ctx, http.MethodGet, sandboxPath(id, "/audit"), q.values(), nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("audit log of %s: %w", id, err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("audit log of %s: %w", id, err)
	}
	return nil
}

// AuditEvents returns the events of the sandbox's log that q selects.
func (c *Client) AuditEvents(ctx context.Context, id string, q AuditQuery) ([]AuditEvent, error) {
	var out []AuditEvent
	err := c.AuditLog(ctx, id, q, func(e AuditEvent) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// VerifyAudit has the server check the sandbox's log against its hash
// chain.
func (c *Client) VerifyAudit(ctx context.Context, id string) (AuditVerify, error) {
	var out AuditVerify
	err := c.doJSON(ctx, http.MethodGet, sandboxPath(id, "/audit/verify"), nil, nil, &out)
	return out, err
}

// AuditExport returns the sandbox's log as one gzipped tar file
// (manifest.json, events.jsonl, casts), for offline verification.
func (c *Client) AuditExport(ctx context.Context, id string) (io.ReadCloser, error) {
	resp, err := c.do(ctx, http.MethodGet, sandboxPath(id, "/audit/export"), nil, nil, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// AuditKey is the public key that signs a server's audit exports.
type AuditKey struct {
	Alg         string `json:"alg"`
	PublicKey   string `json:"public_key"` // base64
	Fingerprint string `json:"fingerprint"`
}

// AuditKey returns the key that signs the server's audit exports.
func (c *Client) AuditKey(ctx context.Context) (AuditKey, error) {
	var k AuditKey
	err := c.doJSON(ctx, http.MethodGet, "/v1/audit/key", nil, nil, &k)
	return k, err
}
