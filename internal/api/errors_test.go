package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/store"
)

func TestStatusOf(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
		msg    string
	}{
		{fmt.Errorf("sandbox sb_1: %w", sandbox.ErrNotFound), 404, "not_found", "sandbox sb_1: not found"},
		{store.ErrNotFound, 404, "not_found", "not found"},
		{fmt.Errorf("stat /x: %w", runtime.ErrNotFound), 404, "not_found", "stat /x: not found"},
		{fmt.Errorf("template %q: %w", "nope", sandbox.ErrInvalid), 400, "invalid_argument", `template "nope": invalid argument`},
		{runtime.ErrInvalid, 400, "invalid_argument", "invalid argument"},
		{sandbox.ErrConflict, 409, "conflict", "conflict"},
		{store.ErrConflict, 409, "conflict", "already exists"},
		{runtime.ErrConflict, 409, "conflict", "already exists"},
		{fmt.Errorf("tenant quota: %w", sandbox.ErrLimitExceeded), 429, "limit_exceeded", "tenant quota: limit exceeded"},
		{sandbox.ErrUnavailable, 503, "unavailable", "unavailable"},
		// A tenant's storage quota and the host's free disk get codes of
		// their own: the first passes only with retention or a new quota,
		// the second needs the operator.
		{fmt.Errorf("%w: %w: tenant a keeps 1.0 MiB of 1.0 MiB", sandbox.ErrLimitExceeded, sandbox.ErrStorageQuota), 429, "storage_quota",
			"limit exceeded: storage quota: tenant a keeps 1.0 MiB of 1.0 MiB"},
		{fmt.Errorf("%w: %w: the data dir /d has 1 B free", sandbox.ErrUnavailable, sandbox.ErrLowDisk), 503, "low_disk",
			"unavailable: low disk space: the data dir /d has 1 B free"},
		{runtime.ErrUnavailable, 503, "unavailable", "unavailable"},
		{runtime.ErrUnsupported, 503, "unavailable", "not supported on this host"},
		{context.DeadlineExceeded, 503, "unavailable", "the operation timed out"},
		{&http.MaxBytesError{Limit: 10}, 413, "invalid_argument", "request body is larger than 10 bytes"},
		{invalidf("field %q is bad", "x"), 400, "invalid_argument", `field "x" is bad`},
		{errf(415, codeInvalid, "ct"), 415, "invalid_argument", "ct"},
		// Unmapped errors keep their text (it may hold host paths) out of
		// the answer.
		{errors.New("open /var/lib/airlock/secret: permission denied"), 500, "internal", "internal error"},
	} {
		status, code, msg := statusOf(tc.err)
		if status != tc.status || code != tc.code || msg != tc.msg {
			t.Errorf("statusOf(%v) = %d %q %q, want %d %q %q", tc.err, status, code, msg, tc.status, tc.code, tc.msg)
		}
	}
}

// TestErrorAnswers: domain errors from the manager reach the client mapped.
func TestErrorAnswers(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("quota: %w", sandbox.ErrLimitExceeded), 429, "limit_exceeded"},
		{fmt.Errorf("pool: %w", sandbox.ErrUnavailable), 503, "unavailable"},
		{errors.New("boom"), 500, "internal"},
	} {
		e.m.err = tc.err
		a := e.do(call{method: "POST", path: "/v1/sandboxes", cred: e.alice, body: `{}`})
		if code, _ := a.errCode(); a.status != tc.status || code != tc.code {
			t.Errorf("%v: %d %s, want %d %s", tc.err, a.status, a.body, tc.status, tc.code)
		}
	}
}
