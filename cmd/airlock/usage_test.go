package main

import (
	"testing"
	"time"
)

func TestParseUsageTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-01-31", time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC), true},
		{"2026-01-31T12:30:00+02:00", time.Date(2026, 1, 31, 10, 30, 0, 0, time.UTC), true},
		{"2026-01-31T12:30:00", time.Time{}, false}, // no zone: ambiguous
		{"yesterday", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, err := parseUsageTime(tc.in)
		if (err == nil) != tc.ok || !got.Equal(tc.want) {
			t.Errorf("parseUsageTime(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestBytesCell(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 200 << 20: "200.0 MiB", 3 << 40: "3.0 TiB"} {
		if got := bytesCell(n); got != want {
			t.Errorf("bytesCell(%d) = %q, want %q", n, got, want)
		}
	}
}
