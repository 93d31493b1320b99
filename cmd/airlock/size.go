package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseSizeMB reads 512M, 1G, 1.5GiB, 64MB or a plain byte count, and
// returns whole MiB.
func parseSizeMB(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := 1.0 / (1 << 20)
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1.0/1024, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mult, t = 1, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mult, t = 1024, t[:len(t)-1]
	case strings.HasSuffix(t, "T"):
		mult, t = 1024*1024, t[:len(t)-1]
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) || v*mult > 1<<40 {
		return 0, fmt.Errorf("bad size %q: want e.g. 512M or 2G", s)
	}
	mb := int64(v * mult)
	if mb < 1 {
		return 0, fmt.Errorf("size %q is below 1 MiB", s)
	}
	return mb, nil
}

// sizeFlag parses sizes like 512M, 1G, 1.5GiB, 1048576 into MiB.
type sizeFlag struct{ mb int64 }

func (s *sizeFlag) String() string { return "" }
func (s *sizeFlag) Set(v string) error {
	mb, err := parseSizeMB(v)
	s.mb = mb
	return err
}
