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
