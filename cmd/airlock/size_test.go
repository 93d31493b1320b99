package main

import "testing"

func TestParseSizeMB(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"512M", 512, true}, {"1G", 1024, true}, {"1.5GiB", 1536, true}, {"64MB", 64, true},
		{"1048576", 1, true}, {"2048k", 2, true}, {"0", 0, false}, {"-1G", 0, false},
		{"lots", 0, false}, {"", 0, false}, {"100", 0, false}, {"1P", 0, false},
	} {
		got, err := parseSizeMB(tc.in)
		if (err == nil) != tc.ok || got != tc.want && tc.ok {
			t.Errorf("parseSizeMB(%q) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseSizeMB(f *testing.F) {
	for _, s := range []string{"512M", "1G", "1.5GiB", "1e3M", "NaN", "Inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mb, err := parseSizeMB(s)
		if err == nil && (mb < 1 || mb > 1<<20*1024) {
			t.Errorf("parseSizeMB(%q) = %d accepted out of range", s, mb)
		}
	})
}
