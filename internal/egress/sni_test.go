package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
)

// clientHello runs a crypto/tls client handshake for serverName into a pipe
// and returns the first record it writes, header included.
func clientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	c1, c2 := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tls.Client(c1, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}).Handshake()
	}()
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(c2, hdr); err != nil {
		t.Fatalf("read record header: %v", err)
	}
	rec := make([]byte, 5+int(binary.BigEndian.Uint16(hdr[3:])))
	copy(rec, hdr)
	if _, err := io.ReadFull(c2, rec[5:]); err != nil {
		t.Fatalf("read record: %v", err)
	}
	c2.Close()
	c1.Close()
	<-done
	return rec
}

func TestPeekSNI(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    string
		wantErr error // nil: any error is a failure; errAny: some error
	}{
		{"name", clientHello(t, "pypi.org"), "pypi.org", nil},
		{"upper case and trailing dot", clientHello(t, "PyPI.org."), "pypi.org", nil},
		// crypto/tls sends no SNI for an IP address: nothing to compare.
		{"ipv4 sends none", clientHello(t, "127.0.0.1"), "", nil},
		{"ipv6 sends none", clientHello(t, "::1"), "", nil},
		{"ssh", []byte("SSH-2.0-OpenSSH_9.6\r\n"), "", errNotTLS},
		// A first message shorter than a TLS record header is no TLS; it
		// must not wait for more bytes (the client waits for an answer).
		{"short non-TLS", []byte("hi"), "", errNotTLS},
		{"truncated", clientHello(t, "pypi.org")[:60], "", io.EOF},
		{"empty record", []byte{0x16, 3, 1, 0, 0}, "", errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(bytes.NewReader(tt.in), maxHead)
			got, err := peekSNI(br)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("peekSNI: %v", err)
			case tt.wantErr == errAny && err == nil:
				t.Fatalf("peekSNI = %q, want an error", got)
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("peekSNI error %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("peekSNI = %q, want %q", got, tt.want)
			}
			// Peeking consumes nothing: the upstream gets every byte.
			rest, _ := io.ReadAll(br)
			if !bytes.Equal(rest, tt.in) {
				t.Errorf("peekSNI consumed bytes: %d of %d left", len(rest), len(tt.in))
			}
		})
	}
}

var errAny = errors.New("any error")

// FuzzClientHelloSNI: a hostile ClientHello never panics the parser.
func FuzzClientHelloSNI(f *testing.F) {
	for _, name := range []string{"pypi.org", "a.b.c.example.com", "127.0.0.1"} {
		f.Add(clientHello(f, name)[5:])
	}
	f.Add([]byte{1, 0, 0, 0})
	f.Add([]byte{1, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		name, err := clientHelloSNI(b)
		if err != nil && name != "" {
			t.Fatalf("clientHelloSNI = %q with error %v", name, err)
		}
		if err == nil && name != "" && bytes.ContainsAny([]byte(name), "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			t.Fatalf("clientHelloSNI = %q, want lower case", name)
		}
	})
}
