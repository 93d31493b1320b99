package runtime

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLimitsDefaults(t *testing.T) {
	got := Limits{MemoryMB: 64}.WithDefaults()
	want := Limits{CPUs: 1, MemoryMB: 64, Pids: 256, DiskMB: 1024, TmpMB: 256}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, l := range []Limits{
		{CPUs: 0.001, MemoryMB: 512, Pids: 256, DiskMB: 1024, TmpMB: 64},
		{CPUs: 1, MemoryMB: 4, Pids: 256, DiskMB: 1024, TmpMB: 64},
		{CPUs: 1, MemoryMB: 512, Pids: 1, DiskMB: 1024, TmpMB: 64},
		{CPUs: 1, MemoryMB: 512, Pids: 256, DiskMB: 1, TmpMB: 64},
		{CPUs: 1, MemoryMB: 512, Pids: 256, DiskMB: 1024, TmpMB: 0},
		{CPUs: -1, MemoryMB: -1, Pids: -1, DiskMB: -1, TmpMB: -1},
	} {
		if err := l.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: got %v, want ErrInvalid", l, err)
		}
	}
}

// TestLimitsOutOfRangeNameFieldAndRange: an absurd limit (a trillion
// pids, 0.001 cpus, a negative size) is refused, and the message names
// the API field and the range a person should pick from.
func TestLimitsOutOfRangeNameFieldAndRange(t *testing.T) {
	ok := DefaultLimits
	for _, tc := range []struct {
		l    Limits
		want string
	}{
		{Limits{CPUs: 0.001, MemoryMB: 512, Pids: 256, DiskMB: 1024, TmpMB: 64}, "cpus 0.001: want 0.01 to 1024"},
		{Limits{CPUs: 5000, MemoryMB: 512, Pids: 256, DiskMB: 1024, TmpMB: 64}, "cpus 5000: want 0.01 to 1024"},
		{Limits{CPUs: 1, MemoryMB: -1, Pids: 256, DiskMB: 1024, TmpMB: 64}, "memory_mb -1: want 16 to 16777216"},
		{Limits{CPUs: 1, MemoryMB: 1 << 40, Pids: 256, DiskMB: 1024, TmpMB: 64}, "memory_mb 1099511627776: want 16 to 16777216"},
		{Limits{CPUs: 1, MemoryMB: 512, Pids: 1 << 40, DiskMB: 1024, TmpMB: 64}, "pids 1099511627776: want 8 to 4194304"},
		{Limits{CPUs: 1, MemoryMB: 512, Pids: -3, DiskMB: 1024, TmpMB: 64}, "pids -3: want 8 to 4194304"},
		{Limits{CPUs: 1, MemoryMB: 512, Pids: 256, DiskMB: -1, TmpMB: 64}, "disk_mb -1: want at least 16"},
	} {
		err := tc.l.Validate()
		var re *RangeError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &re) || err.Error() != tc.want {
			t.Errorf("%+v: got %v, want %q (ErrInvalid, a RangeError)", tc.l, err, tc.want)
		}
	}
	for _, l := range []Limits{ok, {CPUs: MaxCPUs, MemoryMB: MaxMemoryMB, Pids: MaxPids, DiskMB: 1 << 20, TmpMB: 64},
		{CPUs: MinCPUs, MemoryMB: MinMemoryMB, Pids: MinPids, DiskMB: MinDiskMB, TmpMB: MinTmpMB}} {
		if err := l.Validate(); err != nil {
			t.Errorf("%+v, at the ends of the ranges: %v", l, err)
		}
	}
}
