package cast

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeClock advances only when play sleeps.
type fakeClock struct {
	now    time.Time
	cancel func() // called at the nth sleep, when set
	n      int
}

func (f *fakeClock) Now() time.Time { return f.now }

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if f.n--; f.n == 0 && f.cancel != nil {
		f.cancel()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d > 0 {
		f.now = f.now.Add(d)
	}
	return nil
}

// timeline records what play wrote at which fake time.
type timeline struct {
	clk    *fakeClock
	start  time.Time
	writes []string
}

func (tl *timeline) Write(p []byte) (int, error) {
	tl.writes = append(tl.writes, fmt.Sprintf("%v %s", tl.clk.now.Sub(tl.start), p))
	return len(p), nil
}

func TestPlay(t *testing.T) {
	c := &Cast{Header: Header{Version: 2, Width: 80, Height: 24}, Events: []Event{
		ev(500, "o", "a"),
		ev(600, "i", "typed"),
		ev(1000, "o", "b"),
		ev(1000, "o", "c"),
		ev(2000, "m", "marker"),
		ev(11000, "r", "10x10"),
		ev(31000, "o", "d"),
	}}
	for _, tc := range []struct {
		name  string
		speed float64
		idle  time.Duration
		want  []string
	}{
		{"as recorded", 1, 0, []string{"500ms a", "1s b", "1s c", "31s d"}},
		{"twice as fast", 2, 0, []string{"250ms a", "500ms b", "500ms c", "15.5s d"}},
		{"half speed", 0.5, 0, []string{"1s a", "2s b", "2s c", "1m2s d"}},
		// The cap is on pauses between outputs; input, markers and
		// resizes in between do not split a pause.
		{"idle capped", 1, 2 * time.Second, []string{"500ms a", "1s b", "1s c", "3s d"}},
		{"idle capped, then sped up", 4, 2 * time.Second, []string{"125ms a", "250ms b", "250ms c", "750ms d"}},
		{"cap above every pause", 1, time.Hour, []string{"500ms a", "1s b", "1s c", "31s d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{now: t0}
			tl := &timeline{clk: clk, start: t0}
			if err := play(context.Background(), tl, c, tc.speed, tc.idle, clk); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, tl.writes); d != "" {
				t.Errorf("writes (-want +got):\n%s", d)
			}
		})
	}
}

func TestPlayStopsWithContext(t *testing.T) {
	c := &Cast{Events: []Event{ev(0, "o", "a"), ev(1000, "o", "b"), ev(2000, "o", "c")}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk := &fakeClock{now: t0, cancel: cancel, n: 2}
	tl := &timeline{clk: clk, start: t0}
	err := play(ctx, tl, c, 1, 0, clk)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if d := cmp.Diff([]string{"0s a"}, tl.writes); d != "" {
		t.Errorf("writes (-want +got):\n%s", d)
	}
}

func TestPlayBadArguments(t *testing.T) {
	c := &Cast{Events: []Event{ev(0, "o", "a")}}
	for _, tc := range []struct {
		speed float64
		idle  time.Duration
	}{{0, 0}, {-1, 0}, {1, -time.Second}} {
		var buf bytes.Buffer
		if err := Play(context.Background(), &buf, c, tc.speed, tc.idle); err == nil || buf.Len() > 0 {
			t.Errorf("Play(speed %v, idle %v): wrote %q, error %v; want an error and nothing written", tc.speed, tc.idle, buf.Bytes(), err)
		}
	}
}

// TestPlayRealClock plays with real timers: a short cast ends with all of
// its output, and a long one stops when its context is cancelled. Only
// orders of magnitude are checked.
func TestPlayRealClock(t *testing.T) {
	short := &Cast{Events: []Event{ev(0, "o", "a"), ev(5, "i", "x"), ev(10, "o", "b"), ev(20, "o", "c")}}
	var buf bytes.Buffer
	if err := Play(context.Background(), &buf, short, 1, 0); err != nil || buf.String() != "abc" {
		t.Errorf("short cast: wrote %q, %v; want abc", buf.String(), err)
	}

	long := &Cast{Events: []Event{ev(0, "o", "a"), ev(3600e3, "o", "b")}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	buf.Reset()
	start := time.Now()
	err := Play(ctx, &buf, long, 1, 0)
	if !errors.Is(err, context.DeadlineExceeded) || buf.String() != "a" {
		t.Errorf("long cast: wrote %q, %v; want a and the context's error", buf.String(), err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("cancelled play took %v", d)
	}

	// With the idle cap, the hour is a millisecond.
	buf.Reset()
	if err := Play(context.Background(), &buf, long, 1, time.Millisecond); err != nil || buf.String() != "ab" {
		t.Errorf("capped long cast: wrote %q, %v; want ab", buf.String(), err)
	}
}
