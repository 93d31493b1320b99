package fakenet

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer answers the fixed zone in answers, plus rebind.test, and
// remembers every question so tests can prove a name was never looked up.
type dnsServer struct {
	mu      sync.Mutex
	seen    []string
	counts  map[string]int
	rebindA int // A questions for RebindName answered so far
}

// answers is the zone; names absent from it (and not RebindName) are
// NXDOMAIN.
var answers = map[string][]netip.Addr{
	AllowedName:    {netip.MustParseAddr(AllowedIP)},
	WWWAllowedName: {netip.MustParseAddr(AllowedIP)},
	DeniedName:     {netip.MustParseAddr(DeniedIP)},
	MetaName:       {netip.MustParseAddr(MetaIP)},
	LoopName:       {netip.MustParseAddr("127.0.0.1")},
	PrivateName:    {netip.MustParseAddr(PrivateIP)},
	MixedName:      {netip.MustParseAddr(AllowedIP), netip.MustParseAddr(PrivateIP)},
}

// ttl for the fixed zone; rebind.test answers with 0 so that a resolver
// that honours TTLs asks again and gets the second answer.
const ttl = 60

func newDNSServer() *dnsServer { return &dnsServer{counts: map[string]int{}} }

func (d *dnsServer) queries(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts[name]
}

func (d *dnsServer) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.seen...)
}

// lookup records the question and returns its answer: ok is false for a
// name outside the zone, addrs is empty for a known name without an
// answer of that type.
func (d *dnsServer) lookup(q dnsmessage.Question) (addrs []netip.Addr, ttlSec uint32, ok bool) {
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen = append(d.seen, name)
	d.counts[name]++
	if name == RebindName {
		if q.Type != dnsmessage.TypeA {
			return nil, 0, true
		}
		// Counted per A question, not per question: a resolver asks for A
		// and AAAA at once, in either order, and the first A must be the
		// public one for the rebinding to show.
		d.rebindA++
		if d.rebindA == 1 {
			return []netip.Addr{netip.MustParseAddr(RebindIP)}, 0, true
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, 0, true
	}
	a, ok := answers[name]
	if !ok || q.Type != dnsmessage.TypeA {
		return nil, 0, ok
	}
	return a, ttl, true
}

// answer builds the response to the query msg, or returns nil for a
// message that is not a query worth answering.
func (d *dnsServer) answer(msg []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil || h.Response {
		return nil
	}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) == 0 {
		return nil
	}
	rh := dnsmessage.ResourceHeader{Class: dnsmessage.ClassINET}
	var rrs []dnsmessage.Resource
	rcode := dnsmessage.RCodeSuccess
	for _, q := range qs {
		addrs, ttlSec, ok := d.lookup(q)
		if !ok {
			rcode = dnsmessage.RCodeNameError
			continue
		}
		// None: NOERROR with no answer, the name exists, the type not.
		for _, addr := range addrs {
			rh.Name, rh.Type, rh.TTL = q.Name, dnsmessage.TypeA, ttlSec
			rrs = append(rrs, dnsmessage.Resource{Header: rh, Body: &dnsmessage.AResource{A: addr.As4()}})
		}
	}
	resp := dnsmessage.Message{
		Header: dnsmessage.Header{
			ID: h.ID, Response: true, Authoritative: true,
			RecursionDesired: h.RecursionDesired, RCode: rcode,
		},
		Questions: qs,
		Answers:   rrs,
	}
	out, err := resp.Pack()
	if err != nil {
		return nil
	}
	return out
}

// serveUDP answers datagrams until pc is closed.
func (d *dnsServer) serveUDP(pc net.PacketConn, hit func()) {
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		hit()
		if out := d.answer(buf[:n]); out != nil {
			pc.WriteTo(out, from) // a lost reply is the client's to retry
		}
	}
}

// serveTCP answers length-prefixed queries on c until the client stops.
func (d *dnsServer) serveTCP(c net.Conn) {
	defer c.Close()
	for {
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		out := d.answer(msg)
		if out == nil {
			return
		}
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(out))), out...)); err != nil {
			return
		}
	}
}
