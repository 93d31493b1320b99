package client

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// Kinds of error, for errors.Is: errors.Is(err, client.ErrNotFound) holds
// when the server answered not_found (404).
var (
	ErrInvalid         = errors.New("invalid argument")
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("forbidden")
	ErrNotFound        = errors.New("not found")
	ErrConflict        = errors.New("conflict")
	ErrLimitExceeded   = errors.New("limit exceeded")
	ErrUnavailable     = errors.New("unavailable")
	// ErrPaused is the ErrConflict of a call that needs the sandbox
	// running while it is paused (resume it first).
	ErrPaused = errors.New("paused")
)

// Error is an error answer of the server. Status is 0 for an error event in
// the middle of an exec stream, which has no status of its own.
type Error struct {
	Status  int
	Code    string // "not_found", "invalid_argument", ...
	Message string
}

func (e *Error) Error() string {
	if e.Message != "" {
		return e.Message
	}
	if e.Code != "" {
		return strings.ReplaceAll(e.Code, "_", " ")
	}
	return http.StatusText(e.Status)
}

// Is matches the kind (ErrNotFound...) of e's code, or of its status when
// the answer had no code (an error page of a proxy).
func (e *Error) Is(target error) bool {
	if e.Code == "paused" && target == ErrPaused {
		return true
	}
	k := kindOfCode[e.Code]
	if k == nil && e.Code == "" {
		k = kindOfStatus[e.Status]
	}
	return k != nil && k == target
}

var kindOfCode = map[string]error{
	"invalid_argument": ErrInvalid,
	"unauthenticated":  ErrUnauthenticated,
	"forbidden":        ErrForbidden,
	"not_found":        ErrNotFound,
	"conflict":         ErrConflict,
	"paused":           ErrConflict, // and ErrPaused
	"limit_exceeded":   ErrLimitExceeded,
	"storage_quota":    ErrLimitExceeded, // the tenant keeps all its storage quota allows
	"unavailable":      ErrUnavailable,
	"low_disk":         ErrUnavailable, // the server's disk is short of free space
}

var kindOfStatus = map[int]error{
	http.StatusBadRequest:            ErrInvalid,
	http.StatusRequestEntityTooLarge: ErrInvalid,
	http.StatusUnsupportedMediaType:  ErrInvalid,
	http.StatusUnauthorized:          ErrUnauthenticated,
	http.StatusForbidden:             ErrForbidden,
	http.StatusNotFound:              ErrNotFound,
	http.StatusConflict:              ErrConflict,
	http.StatusTooManyRequests:       ErrLimitExceeded,
	http.StatusBadGateway:            ErrUnavailable,
	http.StatusServiceUnavailable:    ErrUnavailable,
	http.StatusGatewayTimeout:        ErrUnavailable,
}

// errorBody is {"error": {"code", "message"}}.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// decodeError reads a non-2xx answer. A body that is not the API's JSON
// (a proxy's error page) becomes the message, cut short.
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{Status: resp.StatusCode}
	var eb errorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
		e.Code, e.Message = eb.Error.Code, eb.Error.Message
		return e
	}
	msg := strings.TrimSpace(string(b))
	if len(msg) > 200 {
		msg = strings.ToValidUTF8(msg[:200], "") + "..."
	}
	if msg == "" {
		msg = resp.Status
	}
	e.Message = msg
	return e
}
