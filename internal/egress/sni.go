package egress

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"strings"
)

// errNotTLS: the tunnel does not start with a TLS handshake (ssh, plain
// TCP); there is no SNI to compare.
var errNotTLS = errors.New("not a TLS handshake")

// peekSNI reads, without consuming, the TLS ClientHello at the start of a
// tunnel and returns its server name ("" if it sends none). The tunnel's
// bytes stay in br for the upstream.
func peekSNI(br *bufio.Reader) (string, error) {
	// The first byte tells TLS from the rest: a short first message of
	// another protocol must not wait for five bytes that never come.
	if b, err := br.Peek(1); err != nil || b[0] != 0x16 { // handshake record
		return "", cmp.Or(err, errNotTLS)
	}
	hdr, err := br.Peek(5)
	if err != nil {
		return "", err
	}
	n := int(binary.BigEndian.Uint16(hdr[3:5]))
	if n == 0 || n > 1<<14+2048 || 5+n > br.Size() {
		return "", errors.New("TLS record length out of range")
	}
	rec, err := br.Peek(5 + n)
	if err != nil {
		return "", err
	}
	return clientHelloSNI(rec[5:])
}

// clientHelloSNI parses a handshake message holding a ClientHello that fits
// in one record (every mainstream client's does) and returns the host name
// of its server_name extension.
func clientHelloSNI(b []byte) (string, error) {
	errBad := errors.New("malformed TLS ClientHello")
	if len(b) < 4 || b[0] != 1 { // client_hello
		return "", errBad
	}
	n := int(b[1])<<16 | int(b[2])<<8 | int(b[3])
	if n > len(b)-4 {
		// Split across records: refused rather than guessed, since an
		// unreadable hello is what a fronting attempt would send.
		return "", errors.New("TLS ClientHello spans several records")
	}
	r := reader(b[4 : 4+n])
	if !r.skip(2+32) || !r.skipVec(1) || !r.skipVec(2) || !r.skipVec(1) {
		return "", errBad
	}
	if len(r) == 0 {
		return "", nil // no extensions
	}
	exts, ok := r.vec(2)
	if !ok {
		return "", errBad
	}
	for len(exts) > 0 {
		typ, ok1 := exts.u16()
		body, ok2 := exts.vec(2)
		if !ok1 || !ok2 {
			return "", errBad
		}
		if typ != 0 { // server_name
			continue
		}
		list, ok := body.vec(2)
		if !ok {
			return "", errBad
		}
		for len(list) > 0 {
			kind, ok1 := list.u8()
			name, ok2 := list.vec(2)
			if !ok1 || !ok2 {
				return "", errBad
			}
			if kind == 0 { // host_name
				return strings.ToLower(strings.TrimSuffix(string(name), ".")), nil
			}
		}
		return "", nil
	}
	return "", nil
}

// reader consumes a TLS-encoded byte string.
type reader []byte

func (r *reader) skip(n int) bool {
	if len(*r) < n {
		return false
	}
	*r = (*r)[n:]
	return true
}

func (r *reader) u8() (byte, bool) {
	if len(*r) < 1 {
		return 0, false
	}
	v := (*r)[0]
	*r = (*r)[1:]
	return v, true
}

func (r *reader) u16() (int, bool) {
	if len(*r) < 2 {
		return 0, false
	}
	v := int(binary.BigEndian.Uint16(*r))
	*r = (*r)[2:]
	return v, true
}

// vec reads a vector with a length prefix of size bytes (1 or 2).
func (r *reader) vec(size int) (reader, bool) {
	var n int
	var ok bool
	if size == 1 {
		var b byte
		b, ok = r.u8()
		n = int(b)
	} else {
		n, ok = r.u16()
	}
	if !ok || len(*r) < n {
		return nil, false
	}
	v := (*r)[:n]
	*r = (*r)[n:]
	return v, true
}

func (r *reader) skipVec(size int) bool {
	_, ok := r.vec(size)
	return ok
}
