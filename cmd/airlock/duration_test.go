package main

import (
	"strings"
	"testing"
	"time"
)

// TestParseDurationIsOneSyntax pins the duration syntax every verb (and
// the console's form) takes: Go's, never negative, and a bare number is
// refused saying what to write.
func TestParseDurationIsOneSyntax(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string // a part of the error; "" when it parses
	}{
		{"90s", 90 * time.Second, ""},
		{"0", 0, ""},
		{"0s", 0, ""},
		{"10m", 10 * time.Minute, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"1.5h", 90 * time.Minute, ""},
		{".5m", 30 * time.Second, ""},
		{"500ms", 500 * time.Millisecond, ""},
		{"2h45m30s", 2*time.Hour + 45*time.Minute + 30*time.Second, ""},
		{"10us", 10 * time.Microsecond, ""},
		{"+5m", 5 * time.Minute, ""},
		{"90", 0, `"90" has no unit: write 90s`},
		{"1.5", 0, `"1.5" has no unit: write 1.5s`},
		{"-5m", 0, `"-5m" is negative`},
		{"", 0, "is not a duration"},
		{"5 m", 0, "is not a duration"},
		{"1d", 0, "is not a duration"},
		{"soon", 0, "is not a duration"},
		{"3000000h", 0, "is not a duration"},
	} {
		got, err := parseDuration(tc.in)
		if got != tc.want || tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, error with %q", tc.in, got, err, tc.want, tc.err)
		}
		if d, gerr := time.ParseDuration(tc.in); err == nil && (gerr != nil || d != got) {
			t.Errorf("parseDuration(%q) = %v, Go reads %v, %v: the syntax must be Go's", tc.in, got, d, gerr)
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
