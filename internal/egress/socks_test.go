package egress

import (
	"io"
	"net/netip"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// socksIP encodes an address as a SOCKS5 request carries it.
func socksIP(ip string) []byte {
	a := netip.MustParseAddr(ip)
	if a.Is4() {
		return append([]byte{1}, a.AsSlice()...)
	}
	return append([]byte{4}, a.AsSlice()...)
}

func socksName(name string) []byte { return append([]byte{3, byte(len(name))}, name...) }

// socksConnect greets the SOCKS listener without authentication, sends a
// request with cmd for addr:port and returns the reply code.
func socksConnect(t *testing.T, tp *testProxy, cmd byte, addr []byte, port int) (*clientConn, byte) {
	t.Helper()
	c := tp.dial(t, tp.socksAddr)
	c.Write([]byte{5, 1, 0})
	var greet [2]byte
	if _, err := io.ReadFull(c, greet[:]); err != nil || greet != [2]byte{5, 0} {
		t.Fatalf("SOCKS greeting: % x, %v; want 05 00", greet, err)
	}
	req := append(append([]byte{5, cmd, 0}, addr...), byte(port>>8), byte(port))
	c.Write(req)
	var rep [10]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		t.Fatalf("SOCKS reply: %v", err)
	}
	return c, rep[1]
}

func TestSOCKS(t *testing.T) {
	echo := startEcho(t)
	other := startEcho(t)
	p := echo.port()
	rule := "127.0.0.1:" + strconv.Itoa(p)
	tests := []struct {
		name   string
		cmd    byte
		addr   []byte
		port   int
		code   byte
		host   string
		reason string
	}{
		{"allowed", 1, socksIP("127.0.0.1"), p, socksOK, "127.0.0.1", ""},
		{"IPv4-mapped IPv6 is the IPv4 address", 1, socksIP("::ffff:127.0.0.1"), p, socksOK, "127.0.0.1", ""},
		{"name that is an address in disguise", 1, socksName("0x7f.1"), p, socksOK, "127.0.0.1", ""},
		{"port not listed", 1, socksIP("127.0.0.1"), other.port(), socksNotAllowed, "127.0.0.1",
			"no allow rule matches 127.0.0.1:" + strconv.Itoa(other.port())},
		{"name not listed", 1, socksName("pypi.org"), 443, socksNotAllowed, "pypi.org", "no allow rule matches pypi.org:443"},
		{"BIND", 2, socksIP("127.0.0.1"), p, socksCmdUnsupported, "127.0.0.1",
			"SOCKS request: only the CONNECT command is supported"},
		{"unknown address type", 1, []byte{9, 127, 0, 0, 1}, p, socksAddrUnsupport, "", "SOCKS request: unknown address type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := startProxy(t, Config{}, allowlist(rule))
			c, code := socksConnect(t, tp, tt.cmd, tt.addr, tt.port)
			if code != tt.code {
				t.Fatalf("reply code %d, want %d", code, tt.code)
			}
			want := Event{SandboxID: "sb1", TenantID: "tenant1", Protocol: "socks5", Host: tt.host, Port: tt.port,
				Decision: Denied, Reason: tt.reason}
			if tt.host == "" {
				want.Port = 0
			}
			if code == socksOK {
				msg := "hello through socks"
				echoOnce(t, c, msg)
				c.Close()
				want.Decision, want.Rule, want.Addr = Allowed, rule, "127.0.0.1"
				ev := tp.waitLog(t, 1)[0]
				// Everything on the connection: greeting, request, payload.
				up, down := int64(3+3+len(tt.addr)+2+len(msg)), int64(2+10+len(msg))
				if ev.BytesUp != up || ev.BytesDown != down {
					t.Errorf("event bytes up %d down %d, want %d and %d", ev.BytesUp, ev.BytesDown, up, down)
				}
			}
			if diff := cmp.Diff([]Event{want}, tp.waitLog(t, 1), ignoreVolatile); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
	if n := other.accepted(t); n != 0 {
		t.Errorf("unlisted port reached %d times", n)
	}
}
