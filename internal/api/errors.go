package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/airlockhq/airlock/internal/errdefs"
	"github.com/airlockhq/airlock/internal/events"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/store"
)

// Error codes of docs/API.md.
const (
	codeInvalid          = "invalid_argument"
	codeUnauthenticated  = "unauthenticated"
	codeForbidden        = "forbidden"
	codeNotFound         = "not_found"
	codeMethodNotAllowed = "method_not_allowed"
	codeConflict         = "conflict"
	codePaused           = "paused"
	codeLimitExceeded    = "limit_exceeded"
	codePidLimit         = "pid_limit"
	codeStorageQuota     = "storage_quota"
	codeUnavailable      = "unavailable"
	codeLowDisk          = "low_disk"
	codeInternal         = "internal"
	// codeSlowConsumer is only ever the code of an event stream's last
	// "dropped" event, never of an error answer.
	codeSlowConsumer = "slow_consumer"
)

// apiError is an error the API itself raises with a status, a code and a
// message meant for the client.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

func errf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func invalidf(format string, args ...any) *apiError {
	return errf(http.StatusBadRequest, codeInvalid, format, args...)
}

// errorBody is the JSON shape of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// statusOf is the one place where an error becomes an HTTP status and code.
// The message of a mapped domain error is its text, which the domain writes
// for clients; anything unmapped is an internal error whose text stays in
// the log.
func statusOf(err error) (status int, code, message string) {
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.code, ae.message
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, codeInvalid,
			fmt.Sprintf("request body is larger than %d bytes", mbe.Limit)
	case errors.Is(err, errdefs.ErrUnauthenticated):
		return http.StatusUnauthorized, codeUnauthenticated, err.Error()
	case errors.Is(err, sandbox.ErrNotFound), errors.Is(err, store.ErrNotFound),
		errors.Is(err, runtime.ErrNotFound):
		return http.StatusNotFound, codeNotFound, err.Error()
	case errors.Is(err, sandbox.ErrInvalid), errors.Is(err, runtime.ErrInvalid), errors.Is(err, events.ErrInvalid):
		return http.StatusBadRequest, codeInvalid, err.Error()
	case errors.Is(err, sandbox.ErrPaused):
		return http.StatusConflict, codePaused, err.Error()
	case errors.Is(err, sandbox.ErrConflict), errors.Is(err, store.ErrConflict),
		errors.Is(err, runtime.ErrConflict):
		return http.StatusConflict, codeConflict, err.Error()
	case errors.Is(err, sandbox.ErrPidLimit):
		return http.StatusTooManyRequests, codePidLimit, err.Error()
	case errors.Is(err, sandbox.ErrStorageQuota):
		return http.StatusTooManyRequests, codeStorageQuota, err.Error()
	case errors.Is(err, sandbox.ErrLimitExceeded), errors.Is(err, events.ErrLimitExceeded):
		return http.StatusTooManyRequests, codeLimitExceeded, err.Error()
	case errors.Is(err, sandbox.ErrLowDisk):
		return http.StatusServiceUnavailable, codeLowDisk, err.Error()
	case errors.Is(err, sandbox.ErrUnavailable), errors.Is(err, runtime.ErrUnavailable),
		errors.Is(err, runtime.ErrUnsupported):
		return http.StatusServiceUnavailable, codeUnavailable, err.Error()
	case errors.Is(err, errdefs.ErrForbidden):
		return http.StatusForbidden, codeForbidden, err.Error()
	case errors.Is(err, events.ErrDisabled):
		// The operator's choice (no master key), not a passing outage.
		return http.StatusForbidden, codeForbidden, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, codeUnavailable, "the operation timed out"
	}
	return http.StatusInternalServerError, codeInternal, "internal error"
}

// fail writes err as a JSON error answer and logs what the client does not
// see.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, code, msg := statusOf(err)
	if status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path,
			"sandbox", r.PathValue("id"), "status", status, "err", err)
	}
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		// The client went away; nobody reads the answer.
		s.log.Debug("client gone", "path", r.URL.Path, "err", err)
		return
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: msg}})
}
