package e2b

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The envd API is Connect RPC in its JSON flavour (the SDK's transport sets
// useBinaryFormat: false): unary calls are a JSON body in and out; a
// server-streaming call sends one enveloped message and gets enveloped
// messages back, the last one flagged as the end of the stream.

// Connect error codes (https://connectrpc.com/docs/protocol#error-codes).
const (
	codeCanceled           = "canceled"
	codeInvalidArgument    = "invalid_argument"
	codeDeadlineExceeded   = "deadline_exceeded"
	codeNotFound           = "not_found"
	codeAlreadyExists      = "already_exists"
	codePermissionDenied   = "permission_denied"
	codeResourceExhausted  = "resource_exhausted"
	codeFailedPrecondition = "failed_precondition"
	codeUnimplemented      = "unimplemented"
	codeInternal           = "internal"
	codeUnavailable        = "unavailable"
	codeUnauthenticated    = "unauthenticated"
)

// rpcError is a Connect error: its code decides the SDK's exception
// (not_found makes files.exists answer false, already_exists makes makeDir
// answer false, ...).
type rpcError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

func (e *rpcError) Error() string { return e.Code + ": " + e.Message }

func rpcErrorf(code, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// httpStatusOf is the status of a unary error answer, as the protocol maps
// each code.
func httpStatusOf(code string) int {
	switch code {
	case codeCanceled:
		return 499
	case codeInvalidArgument, codeFailedPrecondition:
		return http.StatusBadRequest
	case codeDeadlineExceeded:
		return http.StatusGatewayTimeout
	case codeNotFound:
		return http.StatusNotFound
	case codeAlreadyExists:
		return http.StatusConflict
	case codePermissionDenied:
		return http.StatusForbidden
	case codeResourceExhausted:
		return http.StatusTooManyRequests
	case codeUnimplemented:
		return http.StatusNotImplemented
	case codeUnavailable:
		return http.StatusServiceUnavailable
	case codeUnauthenticated:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError
}

// maxMessage bounds one request message: envd requests are small (a
// command line, a path, a chunk of input).
const maxMessage = 4 << 20

// Envelope flags.
const (
	flagCompressed = 0x01
	flagEndStream  = 0x02
)

// readEnvelope reads one enveloped message: a flags byte, a big-endian
// length, the message.
func readEnvelope(r io.Reader) (flags byte, msg []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, fmt.Errorf("read envelope: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxMessage {
		return 0, nil, fmt.Errorf("message of %d bytes is over the limit of %d", n, maxMessage)
	}
	msg = make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return 0, nil, fmt.Errorf("read message: %w", err)
	}
	return hdr[0], msg, nil
}

// appendEnvelope frames msg.
func appendEnvelope(dst []byte, flags byte, msg []byte) []byte {
	dst = append(dst, flags)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(msg)))
	return append(dst, msg...)
}

// decodeUnary reads a unary request's JSON body into v. Unknown fields are
// ignored, as protobuf JSON readers of newer senders must.
func decodeUnary(r *http.Request, v any) *rpcError {
	if ce := r.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		return rpcErrorf(codeUnimplemented, "content encoding %q is not supported", ce)
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxMessage+1))
	if err != nil {
		return rpcErrorf(codeInvalidArgument, "read request: %v", err)
	}
	if len(b) > maxMessage {
		return rpcErrorf(codeResourceExhausted, "request over %d bytes", maxMessage)
	}
	return unmarshalMessage(b, v)
}

// decodeStreamRequest reads the one message a server-streaming call sends.
func decodeStreamRequest(r *http.Request, v any) *rpcError {
	if ce := r.Header.Get("Connect-Content-Encoding"); ce != "" && ce != "identity" {
		return rpcErrorf(codeUnimplemented, "content encoding %q is not supported", ce)
	}
	flags, msg, err := readEnvelope(r.Body)
	if err != nil {
		return rpcErrorf(codeInvalidArgument, "%v", err)
	}
	if flags&flagCompressed != 0 {
		return rpcErrorf(codeUnimplemented, "compressed messages are not supported")
	}
	return unmarshalMessage(msg, v)
}

func unmarshalMessage(b []byte, v any) *rpcError {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil // all fields at their defaults
	}
	if err := json.Unmarshal(b, v); err != nil {
		return rpcErrorf(codeInvalidArgument, "bad request message: %v", err)
	}
	return nil
}

// writeUnary answers a unary call: the message, or the error with its
// status.
func writeUnary(w http.ResponseWriter, v any, rerr *rpcError) {
	w.Header().Set("Content-Type", "application/json")
	if rerr != nil {
		w.WriteHeader(httpStatusOf(rerr.Code))
		json.NewEncoder(w).Encode(rerr)
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		json.NewEncoder(w).Encode(rpcErrorf(codeInternal, "encode answer: %v", err))
		return
	}
	w.Write(b)
}

// stream writes the messages of a server-streaming answer. Send may be
// called from several goroutines (the output and the keep-alive ticker).
type stream struct {
	mu    sync.Mutex
	w     http.ResponseWriter
	rc    *http.ResponseController
	ended bool
	err   error // the first write error: the client went away
}

func newStream(w http.ResponseWriter) *stream {
	w.Header().Set("Content-Type", "application/connect+json")
	// Errors of a stream travel in its end message: the status is always 200.
	w.WriteHeader(http.StatusOK)
	s := &stream{w: w, rc: http.NewResponseController(w)}
	s.rc.Flush()
	return s
}

// Send writes one message and flushes it.
func (s *stream) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.write(0, b)
}

// End writes the end-of-stream message, with rerr if the call failed.
func (s *stream) End(rerr *rpcError) {
	var end struct {
		Error *rpcError `json:"error,omitempty"`
	}
	end.Error = rerr
	b, _ := json.Marshal(end)
	s.write(flagEndStream, b)
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
}

func (s *stream) write(flags byte, msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return errors.New("stream ended")
	}
	if s.err != nil {
		return s.err
	}
	if _, err := s.w.Write(appendEnvelope(nil, flags, msg)); err != nil {
		s.err = err
		return err
	}
	if err := s.rc.Flush(); err != nil {
		s.err = err
	}
	return s.err
}

// keepAliveEvery is how often a quiet stream gets a keep-alive message:
// what the client asked for (Keepalive-Ping-Interval, seconds), bounded so
// that proxies between them do not cut it either.
func keepAliveEvery(r *http.Request) time.Duration {
	d := 30 * time.Second
	if s, err := strconv.Atoi(r.Header.Get("Keepalive-Ping-Interval")); err == nil && s > 0 && time.Duration(s)*time.Second < d {
		d = time.Duration(s) * time.Second
	}
	return d
}

// connectTimeout is the deadline a call asked for in Connect-Timeout-Ms;
// 0 when none.
func connectTimeout(r *http.Request) time.Duration {
	ms, err := strconv.ParseInt(r.Header.Get("Connect-Timeout-Ms"), 10, 64)
	if err != nil || ms <= 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}
