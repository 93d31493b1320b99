package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
)

// Kinds of upstream failure, Event.UpstreamError: the allow-list let a
// connection through and the upstream side failed. An agent told only
// "502" (or a console showing a green "allowed") goes looking at its
// allow-list; told "DNS lookup failed" it looks at the name.
const (
	UpstreamDNS         = "dns"         // the name did not resolve
	UpstreamRefused     = "refused"     // nothing listens there
	UpstreamUnreachable = "unreachable" // no route to the network or host
	UpstreamTimeout     = "timeout"     // no answer in time
	UpstreamTLS         = "tls"         // the proxy's TLS handshake with the upstream failed
	UpstreamReset       = "reset"       // the upstream cut the connection
	UpstreamOther       = "other"
)

// upstreamError is a failure on the upstream side of an allowed
// connection, classified for the client and the log.
type upstreamError struct {
	kind string
	msg  string // what failed, for the answer's body and Event.Reason
	err  error
}

func (e *upstreamError) Error() string { return e.msg }
func (e *upstreamError) Unwrap() error { return e.err }

// upstreamFailure classifies err, an error of dialing, writing to or
// reading from an upstream; during a TLS handshake the proxy opened (tls)
// every failure but a timeout is a TLS one.
func upstreamFailure(err error, handshake bool) *upstreamError {
	var ue *upstreamError
	if errors.As(err, &ue) {
		return ue
	}
	kind, what := classifyUpstream(err)
	if handshake && kind != UpstreamTimeout {
		kind, what = UpstreamTLS, "TLS handshake with the upstream failed: "+err.Error()
	}
	return &upstreamError{kind: kind, msg: what, err: err}
}

// classifyUpstream names the kind of err and says what failed.
func classifyUpstream(err error) (kind, what string) {
	var dnsErr *net.DNSError
	var errno syscall.Errno
	var ne net.Error
	switch {
	case errors.As(err, &dnsErr):
		return UpstreamDNS, "DNS lookup failed: " + dnsErr.Err
	case errors.Is(err, syscall.ECONNREFUSED):
		return UpstreamRefused, "connection refused" + at(err)
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		errors.As(err, &errno)
		return UpstreamUnreachable, errno.Error() + at(err)
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ETIMEDOUT), errors.As(err, &ne) && ne.Timeout():
		return UpstreamTimeout, "timed out" + at(err)
	case isTLSError(err):
		return UpstreamTLS, "TLS handshake with the upstream failed: " + err.Error()
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return UpstreamReset, "connection reset by the upstream"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return UpstreamReset, "the upstream closed the connection before answering"
	}
	return UpstreamOther, err.Error()
}

// at names the address of a failed connect, if err says it.
func at(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" && oe.Addr != nil {
		return " connecting to " + oe.Addr.String()
	}
	return ""
}

func isTLSError(err error) bool {
	var rh tls.RecordHeaderError
	var ae tls.AlertError
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &rh) || errors.As(err, &ae) || errors.As(err, &cv) ||
		errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) ||
		strings.HasPrefix(err.Error(), "tls: ")
}

// status is the HTTP answer for the failure: 504 when the upstream did not
// answer in time, 502 otherwise.
func (e *upstreamError) status() int {
	if e.kind == UpstreamTimeout {
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// socksCode is the SOCKS5 reply (RFC 1928) for the failure.
func (e *upstreamError) socksCode() byte {
	switch {
	case e.kind == UpstreamDNS:
		return socksHostUnreach
	case e.kind == UpstreamRefused:
		return socksRefused
	case e.kind == UpstreamUnreachable && errors.Is(e.err, syscall.ENETUNREACH):
		return socksNetUnreach
	case e.kind == UpstreamUnreachable:
		return socksHostUnreach
	case e.kind == UpstreamTimeout:
		return socksTTLExpired
	}
	return socksFailure
}

// markUpstream records the failure in ev: the policy allowed the
// connection, so the decision stays allowed.
func (ev *Event) markUpstream(e *upstreamError) {
	ev.Decision, ev.UpstreamError, ev.Reason = Allowed, e.kind, e.msg
}
