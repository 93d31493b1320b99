package e2b

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/airlockhq/airlock/client"
)

// A sandbox's ports as E2B's SDKs reach them: sandbox.getHost(port) is
// PORT-ID.DOMAIN, and with E2B_SANDBOX_URL set an SDK sends port traffic
// (the code interpreter's port 49999) to that one URL, naming the sandbox
// and port in the E2b-Sandbox-Id and E2b-Sandbox-Port headers. Both end in
// Options.Ports, the daemon's port proxy, which decides with openPort
// below who may pass; envd's own port, on a host name, is the facade's
// envd API. Who reaches what:
//
//   - a sandbox created through the facade with public traffic (E2B's
//     default): anyone who knows its id, as at E2B;
//   - one created with network.allowPublicTraffic false: a request whose
//     e2b-traffic-access-token header is the trafficAccessToken its create
//     or connect answered (403 without it, or with another);
//   - any sandbox: a request with an Airlock API key of its tenant, or the
//     sandbox's own token, in Authorization: Bearer. A sandbox made
//     natively (or through the facade before this existed) has no traffic
//     rule and is reached this way only: a server started with
//     --e2b-domain opens nothing that was closed.
//
// Authorization, the console's cookie, X-Access-Token (the envd token is
// an Airlock sandbox token), the traffic token and the routing headers
// never reach the sandbox's server.

// envdPort is the port E2B's SDKs address envd on.
const envdPort = 49983

// trafficMeta is the metadata key that holds a sandbox's traffic rule,
// set at create from network.allowPublicTraffic: "public" or "token". The
// facade hides it from E2B's metadata; a native create may set it, as the
// tenant's own choice, which is all the facade's create is.
const trafficMeta = "airlock.e2b.traffic"

const (
	trafficPublic = "public"
	trafficToken  = "token"
)

// Header names of E2B's port traffic.
const (
	headerSandboxID    = "E2b-Sandbox-Id"
	headerSandboxPort  = "E2b-Sandbox-Port"
	headerTrafficToken = "E2b-Traffic-Access-Token"
	headerEnvdToken    = "X-Access-Token"
)

// trafficTokenContext starts what a traffic token is the HMAC of, so that
// the key's MACs of anything else are never a token.
const trafficTokenContext = "airlock e2b traffic access token v1\x00"

// PortRequest is a request for a sandbox's port, as the facade hands it to
// Options.Ports (the daemon's api.Handler.ServePort, whose PortRequest
// has the same fields). See api.PortRequest for what each field means.
type PortRequest struct {
	Sandbox       string
	Port          int
	Path, RawPath string
	Open          func(r *http.Request, metadata map[string]string) error
	Fail          func(w http.ResponseWriter, r *http.Request, status int, msg string)
	Drop          []string
}

// portDrop are the request headers never forwarded into a sandbox's port,
// beyond Authorization and the console's cookie (the API drops those).
var portDrop = []string{headerEnvdToken, headerTrafficToken, headerSandboxID, headerSandboxPort}

// HostRequest reports whether r names a sandbox port by its host,
// PORT-ID.DOMAIN (any :port after it ignored), and returns r as the
// facade's handler takes it: at its envd path, the sandbox and port in
// E2B's routing headers, which the host overrides as at E2B. A server
// without a domain has no such hosts.
func HostRequest(r *http.Request, domain string) (*http.Request, bool) {
	id, port, ok := parseHost(r.Host, domain)
	if !ok {
		return nil, false
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/envd" + r.URL.Path
	if r.URL.RawPath != "" {
		r2.URL.RawPath = "/envd" + r.URL.RawPath
	}
	r2.Header.Set(headerSandboxID, id)
	r2.Header.Set(headerSandboxPort, strconv.Itoa(port))
	return r2, true
}

// IsSandboxHost reports whether host is a sandbox's, PORT-ID.domain.
func IsSandboxHost(host, domain string) bool {
	_, _, ok := parseHost(host, domain)
	return ok
}

// parseHost splits host, PORT-ID.DOMAIN[:port], into the sandbox id and
// port. PORT is a decimal port without leading zeros, ID one DNS label's
// worth of [a-z0-9-] (Airlock ids are sb- and hex); the comparison with
// domain ignores case and a trailing dot.
func parseHost(host, domain string) (id string, port int, ok bool) {
	domain = strings.TrimSuffix(strings.ToLower(domain), ".")
	if domain == "" {
		return "", 0, false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	label, ok := strings.CutSuffix(host, "."+domain)
	if !ok {
		return "", 0, false
	}
	portText, id, ok := strings.Cut(label, "-")
	if !ok || !validID(id) {
		return "", 0, false
	}
	if port, ok = parsePort(portText); !ok {
		return "", 0, false
	}
	return id, port, true
}

// parsePort reads a port as E2B's SDKs write one: 1 to 65535 in decimal,
// no sign, no leading zero.
func parsePort(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

// validID keeps what reaches the store to one DNS label of lower-case
// letters, digits and hyphens.
func validID(id string) bool {
	if id == "" || len(id) > 63 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// servePort serves a request at the envd path whose E2b-Sandbox-Port names
// another port than envd's: that sandbox port, through Options.Ports. It
// reports false for every other request, which the facade's routes serve.
func (h *Handler) servePort(w http.ResponseWriter, r *http.Request) bool {
	path, ok := strings.CutPrefix(r.URL.Path, "/envd")
	portText := strings.TrimSpace(r.Header.Get(headerSandboxPort))
	if !ok || path != "" && path[0] != '/' || portText == "" || portText == strconv.Itoa(envdPort) {
		return false
	}
	id := strings.TrimSpace(r.Header.Get(headerSandboxID))
	port, ok := parsePort(portText)
	switch {
	case !ok:
		writePortError(w, r, id, http.StatusBadRequest, fmt.Sprintf("%s %q: want a port from 1 to 65535", headerSandboxPort, portText))
		return true
	case id == "":
		writePortError(w, r, id, http.StatusBadRequest, "missing header: "+headerSandboxID)
		return true
	case !validID(id):
		writePortError(w, r, id, http.StatusNotFound, fmt.Sprintf("sandbox %q not found", id))
		return true
	case h.opts.Ports == nil:
		writePortError(w, r, id, http.StatusNotImplemented, "this server does not serve sandbox ports to the E2B facade")
		return true
	}
	rawPath, _ := strings.CutPrefix(r.URL.RawPath, "/envd")
	open := func(r *http.Request, md map[string]string) error { return h.openPort(id, r, md) }
	fail := func(w http.ResponseWriter, r *http.Request, status int, msg string) {
		writePortError(w, r, id, status, msg)
	}
	h.opts.Ports(w, r, PortRequest{Sandbox: id, Port: port, Path: path, RawPath: rawPath, Open: open, Fail: fail, Drop: portDrop})
	return true
}

// portError is E2B's edge proxy's error body.
type portError struct {
	SandboxID string `json:"sandboxId"`
	Message   string `json:"message"`
	Code      int    `json:"code"`
}

func writePortError(w http.ResponseWriter, _ *http.Request, id string, status int, msg string) {
	writeJSON(w, status, portError{SandboxID: id, Message: msg, Code: status})
}

// refusal is openPort's answer to a request it does not let through: the
// API answers it with PortStatus.
type refusal struct {
	status int
	msg    string
}

func (e *refusal) Error() string   { return e.msg }
func (e *refusal) PortStatus() int { return e.status }

// openPort is the traffic rule of a request without an Airlock
// credential, by the sandbox's metadata (see the top of this file).
func (h *Handler) openPort(id string, r *http.Request, metadata map[string]string) error {
	switch metadata[trafficMeta] {
	case trafficPublic:
		return nil
	case trafficToken:
		got := r.Header.Get(headerTrafficToken)
		if got == "" {
			return &refusal{http.StatusForbidden, fmt.Sprintf("Sandbox is secured with traffic access token. Token header '%s' is missing", strings.ToLower(headerTrafficToken))}
		}
		if len(h.opts.TrafficKey) == 0 || subtle.ConstantTimeCompare([]byte(got), []byte(h.trafficToken(id))) != 1 {
			return &refusal{http.StatusForbidden, fmt.Sprintf("Sandbox is secured with traffic access token. Provided token in header '%s' is invalid", strings.ToLower(headerTrafficToken))}
		}
		return nil
	}
	return &refusal{http.StatusUnauthorized, fmt.Sprintf("sandbox %s was not created through the E2B API with public traffic: its ports need an Airlock API key of its tenant, or its own token, in Authorization: Bearer", id)}
}

// trafficToken is sandbox id's trafficAccessToken: an HMAC of its id
// under the server's key (derived from the master key), so it is never
// stored, is the same after a restart and on every replica, and a fork's
// is its own. Hex of 32 bytes: as long as any other credential here.
func (h *Handler) trafficToken(id string) string {
	m := hmac.New(sha256.New, h.opts.TrafficKey)
	m.Write([]byte(trafficTokenContext + id))
	return "att_" + hex.EncodeToString(m.Sum(nil))
}

// withTraffic records b's traffic rule in the new sandbox's metadata.
// E2B's maskRequestHost (the Host its proxy sends in) is refused: the
// sandbox's server always sees localhost:PORT, as on Airlock's own route.
func (b createBody) withTraffic(md map[string]string) (map[string]string, error) {
	if _, ok := md[trafficMeta]; ok {
		return md, fmt.Errorf("metadata key %q is reserved: set network.allowPublicTraffic instead", trafficMeta)
	}
	rule := trafficPublic
	if n := b.Network; n != nil {
		if n.MaskRequestHost != nil && *n.MaskRequestHost != "" {
			return md, fmt.Errorf("network.maskRequestHost is not supported by Airlock: a sandbox's server is always asked for localhost:PORT")
		}
		if n.AllowPublicTraffic != nil && !*n.AllowPublicTraffic {
			rule = trafficToken
		}
	}
	md = maps.Clone(md)
	if md == nil {
		md = map[string]string{}
	}
	md[trafficMeta] = rule
	return md, nil
}

// briefOf is brief with the server's domain for host names, and the
// sandbox's trafficAccessToken for a sandbox whose traffic needs one.
func (h *Handler) briefOf(sb client.Sandbox, envdToken string) sandboxBody {
	b := brief(sb, envdToken)
	if h.opts.Domain != "" {
		b.Domain = &h.opts.Domain
	}
	if sb.Metadata[trafficMeta] == trafficToken && len(h.opts.TrafficKey) > 0 {
		b.TrafficAccessToken = h.trafficToken(sb.ID)
	}
	return b
}

// trafficDetail shows a sandbox's traffic rule as E2B's
// network.allowPublicTraffic, and keeps the metadata key out of E2B's
// metadata.
func trafficDetail(b *sandboxBody, sb client.Sandbox) {
	rule, ok := sb.Metadata[trafficMeta]
	if !ok {
		return
	}
	b.Metadata = maps.Clone(b.Metadata)
	delete(b.Metadata, trafficMeta)
	public := rule == trafficPublic
	if b.Network == nil {
		b.Network = &networkBody{}
	}
	b.Network.AllowPublicTraffic = &public
}

// CheckDomain checks a domain for host-named ports (serve's
// --e2b-domain): a DNS name of at least two labels, without scheme, port,
// path or wildcard.
func CheckDomain(d string) error {
	labels := strings.Split(strings.TrimSuffix(d, "."), ".")
	if len(d) > 253 || len(labels) < 2 {
		return fmt.Errorf("%q: want a DNS name such as sandboxes.example.com (sandbox ports are then PORT-SANDBOXID.sandboxes.example.com)", d)
	}
	for _, l := range labels {
		if !validLabel(strings.ToLower(l)) {
			return fmt.Errorf("%q: want a DNS name such as sandboxes.example.com, without scheme, port, path or wildcard", d)
		}
	}
	return nil
}

func validLabel(l string) bool {
	return validID(l) && l[0] != '-' && l[len(l)-1] != '-'
}
