package main

import (
	"net"
	"testing"
)

func TestLoopbackAddr(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7070}, "127.0.0.1:7070"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 7070}, "127.0.0.1:7070"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 80}, "[::1]:80"},
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 1}, "10.1.2.3:1"},
		{&net.TCPAddr{Port: 9}, "127.0.0.1:9"},
	} {
		if got := loopbackAddr(tc.addr); got != tc.want {
			t.Errorf("loopbackAddr(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
