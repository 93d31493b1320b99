package main

import (
	"testing"
	"time"
)

// TestParseDurationIsOneSyntax pins the duration syntax every verb (and
// the console's form) takes: whole seconds or numbers with h, m, s, ms.
func TestParseDurationIsOneSyntax(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90", 90 * time.Second, true},
		{"0", 0, true},
		{"90s", 90 * time.Second, true},
		{"10m", 10 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"1.5h", 90 * time.Minute, true},
		{".5m", 30 * time.Second, true},
		{"500ms", 500 * time.Millisecond, true},
		{"2h45m30s", 2*time.Hour + 45*time.Minute + 30*time.Second, true},
		{"", 0, false},
		{"-5m", 0, false},
		{"+5m", 0, false},
		{"-5", 0, false},
		{"5 m", 0, false},
		{" 5m", 0, false},
		{"1.5", 0, false},
		{"1.m", 0, false},
		{"1e3s", 0, false},
		{"10us", 0, false},
		{"10ns", 0, false},
		{"1d", 0, false},
		{"soon", 0, false},
		{"99999999999999999999", 0, false},
		{"9999999999999", 0, false}, // seconds past what a Duration holds
		{"3000000h", 0, false},
	} {
		got, err := parseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestDurationRangeMessages pins the words of an out-of-range duration.
func TestDurationRangeMessages(t *testing.T) {
	for _, tc := range []struct {
		what     string
		d        time.Duration
		min, max time.Duration
		want     string
	}{
		{"--timeout 48h", 48 * time.Hour, time.Second, 24 * time.Hour, "--timeout 48h is longer than the 24h maximum"},
		{"--timeout 0", 0, time.Second, 24 * time.Hour, "--timeout 0 is shorter than the 1s minimum"},
		{"90m", 90 * time.Minute, time.Second, time.Hour, "90m is longer than the 1h maximum"},
		{"--timeout 1h30m", 90 * time.Minute, time.Second, 2*time.Hour + 30*time.Minute, ""},
	} {
		err := checkDuration(tc.what, tc.d, tc.min, tc.max)
		if got := errText(err); got != tc.want {
			t.Errorf("checkDuration(%q) = %q, want %q", tc.what, got, tc.want)
		}
	}
	if got := shortDuration(2*time.Hour + 30*time.Minute); got != "2h30m" {
		t.Errorf("shortDuration(2h30m) = %q", got)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90", "1h30m", "1.5h", "-1s", ".5m", "1e3s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := parseDuration(s); err == nil && d < 0 {
			t.Fatalf("parseDuration(%q) = %v, negative", s, d)
		}
	})
}
