package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// maxHead bounds a request's line and headers.
const maxHead = 64 << 10

// errHeadTooLarge: the request head does not fit in maxHead.
var errHeadTooLarge = errors.New("request head too large")

// peekHosts returns the raw Host header values of the request waiting in
// br, without consuming it. net/http folds Host into Request.Host and drops
// the header, and for an absolute-form request it prefers the URL, so a
// Host header naming another site would go unseen.
func peekHosts(br *bufio.Reader) ([]string, error) {
	head, err := peekHead(br)
	if err != nil {
		return nil, err
	}
	// A folded line (RFC 9112 5.2: obsolete, a server must refuse or
	// unfold it) is where the peek and net/http would read a header
	// differently: "Host: a.test" folded onto " " reads "a.test " to
	// textproto. Refused, never checked against the allow-list.
	for _, l := range bytes.Split(head, []byte("\n"))[1:] {
		if len(l) > 0 && (l[0] == ' ' || l[0] == '\t') {
			return nil, errFoldedHead
		}
	}
	return headerValues(head, "host"), nil
}

// errFoldedHead: a request head with obsolete line folding.
var errFoldedHead = errors.New("malformed request: obsolete line folding in the head")

// peekHeader returns the raw values of the header lines named field in the
// request or response head waiting in br, without consuming it.
func peekHeader(br *bufio.Reader, field string) ([]string, error) {
	head, err := peekHead(br)
	if err != nil {
		return nil, err
	}
	return headerValues(head, field), nil
}

// peekHead returns the head waiting in br, up to the empty line that ends
// it, without consuming it.
func peekHead(br *bufio.Reader) ([]byte, error) {
	n := 1
	for {
		// Peek(n) waits for n bytes; what is buffered beyond is free.
		if _, err := br.Peek(n); err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return nil, errHeadTooLarge
			}
			return nil, err
		}
		b, _ := br.Peek(br.Buffered())
		// The head ends at the first empty line, as textproto reads it:
		// "\n" then "\n" or "\r\n" ("\r\n\r\n" holds "\n\r\n").
		i := bytes.Index(b, []byte("\n\n"))
		if j := bytes.Index(b, []byte("\n\r\n")); j >= 0 && (i < 0 || j < i) {
			i = j
		}
		if i >= 0 {
			return b[:i], nil
		}
		if len(b) >= maxHead {
			return nil, errHeadTooLarge
		}
		n = len(b) + 1
	}
}

// headerValues returns the values of the header lines named field in a
// head.
func headerValues(head []byte, field string) []string {
	var out []string
	lines := bytes.Split(head, []byte("\n"))
	for _, l := range lines[1:] { // lines[0] is the request or status line
		name, value, ok := bytes.Cut(bytes.TrimRight(l, "\r"), []byte(":"))
		if ok && strings.EqualFold(string(name), field) {
			out = append(out, string(bytes.TrimSpace(value)))
		}
	}
	return out
}

// target is where a proxy request wants to go.
type target struct {
	name string     // a DNS name, or
	ip   netip.Addr // an IP literal
	port int
}

func (t target) host() string {
	if t.name != "" || !t.ip.IsValid() { // no target at all: "", not "invalid IP"
		return t.name
	}
	return t.ip.String()
}

func (t target) String() string { return net.JoinHostPort(t.host(), strconv.Itoa(t.port)) }

func (t target) sameHost(o target) bool { return t.name == o.name && t.ip == o.ip }

// parseHostPort parses "host[:port]" as a client wrote it; defPort applies
// when there is no port (0: a port is required).
func parseHostPort(s string, defPort int) (target, error) {
	host, portStr := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, portStr = h, p
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}
	port := defPort
	if portStr != "" {
		p, err := strconv.Atoi(portStr)
		if err != nil || p < 1 || p > 65535 || portStr[0] == '+' {
			return target{}, fmt.Errorf("bad port in %q", s)
		}
		port = p
	}
	if port == 0 {
		return target{}, fmt.Errorf("%q has no port", s)
	}
	name, ip, err := ParseHost(host)
	if err != nil {
		return target{}, err
	}
	return target{name: name, ip: ip, port: port}, nil
}

// requestTarget returns where req asks to go. A CONNECT names host:port; any
// other request must be absolute-form http:// (the proxy is not a web
// server) with exactly one Host header naming the same host and port, so a
// request cannot pass the allow-list with one site and ask another.
func requestTarget(req *http.Request, hosts []string) (target, error) {
	if req.Method == http.MethodConnect {
		return parseHostPort(req.RequestURI, 0)
	}
	u := req.URL
	switch {
	case u == nil || u.Host == "":
		return target{}, errors.New("not a proxy request: want an absolute http:// URL or CONNECT")
	case u.Scheme != "http":
		return target{}, fmt.Errorf("scheme %q: use CONNECT for https and anything but http", u.Scheme)
	case u.User != nil:
		return target{}, errors.New("credentials in the URL are not forwarded")
	}
	t, err := parseHostPort(u.Host, 80)
	if err != nil {
		return target{}, err
	}
	if len(hosts) != 1 {
		return target{}, fmt.Errorf("want exactly one Host header, got %d", len(hosts))
	}
	h, err := parseHostPort(hosts[0], 80)
	if err != nil {
		return target{}, fmt.Errorf("Host header: %w", err)
	}
	if !h.sameHost(t) || h.port != t.port {
		return t, &frontingError{fmt.Sprintf("Host header %s differs from the request's target %s", h, t)}
	}
	return t, nil
}

// frontingError: a request names one host to the allow-list and another to
// the server (domain fronting).
type frontingError struct{ msg string }

func (e *frontingError) Error() string { return e.msg }
