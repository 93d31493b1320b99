//go:build !linux

package netns

import (
	"context"
	"net"
	"os"
)

// Do returns ErrUnsupported: network namespaces are a Linux facility.
func Do(ns *os.File, fn func() error) error { return ErrUnsupported }

// Listen returns ErrUnsupported: network namespaces are a Linux facility.
func Listen(ns *os.File, network, address string) (net.Listener, error) {
	return nil, ErrUnsupported
}

// ListenPacket returns ErrUnsupported: network namespaces are a Linux facility.
func ListenPacket(ns *os.File, network, address string) (net.PacketConn, error) {
	return nil, ErrUnsupported
}

// New returns ErrUnsupported: network namespaces are a Linux facility.
func New() (*os.File, error) { return nil, ErrUnsupported }

// SetLoopbackUp returns ErrUnsupported: network namespaces are a Linux facility.
func SetLoopbackUp(ns *os.File) error { return ErrUnsupported }

// Dial returns ErrUnsupported: network namespaces are a Linux facility.
func Dial(ctx context.Context, ns *os.File, network, address string) (net.Conn, error) {
	return nil, ErrUnsupported
}
