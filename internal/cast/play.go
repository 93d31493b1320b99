package cast

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"
)

// Play writes c's output to w with its recorded timing divided by speed
// (2: twice as fast). A pause between two outputs longer than idleLimit
// is cut to idleLimit (0: pauses are kept). It returns ctx's error when
// ctx ends first.
func Play(ctx context.Context, w io.Writer, c *Cast, speed float64, idleLimit time.Duration) error {
	return play(ctx, w, c, speed, idleLimit, realClock{})
}

// clock is time for play; tests give it a fake.
type clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends, and then returns ctx.Err().
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func play(ctx context.Context, w io.Writer, c *Cast, speed float64, idleLimit time.Duration, clk clock) error {
	if !(speed > 0) || math.IsInf(speed, 0) {
		return fmt.Errorf("play: speed %v: want a positive number", speed)
	}
	if idleLimit < 0 {
		return fmt.Errorf("play: idle limit %v: want 0 or more", idleLimit)
	}
	// Each output is due at a time from the start, not a pause after the
	// one before: the time spent writing does not add up over a long cast.
	start := clk.Now()
	var due, prev time.Duration
	for _, e := range c.Events {
		if e.Code != Output {
			continue
		}
		gap := e.Time - prev
		prev = e.Time
		if idleLimit > 0 && gap > idleLimit {
			gap = idleLimit
		}
		due += time.Duration(float64(gap) / speed)
		if err := clk.Sleep(ctx, due-clk.Now().Sub(start)); err != nil {
			return err
		}
		if _, err := io.WriteString(w, e.Data); err != nil {
			return err
		}
	}
	return nil
}
