package cast

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"time"
)

// MaxLine bounds one line of a cast file that Parse accepts.
const MaxLine = 16 << 20

// maxSeconds is the latest event time Parse accepts: about 31 years,
// far inside time.Duration's range.
const maxSeconds = 1e9

var resizeRE = regexp.MustCompile(`^([1-9][0-9]{0,4})x([1-9][0-9]{0,4})$`)

// Parse reads an asciicast v2 file strictly: a header object with version
// 2 and a positive width and height, then one [time, code, data] array
// per line with times that never go back, codes o, i, m or r, and resize
// data "COLSxROWS". Unknown header fields are ignored (later writers add
// some); anything else out of shape is an error naming its line.
func Parse(r io.Reader) (*Cast, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	c := &Cast{}
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			h, err := parseHeader(b)
			if err != nil {
				return nil, fmt.Errorf("cast line 1: %w", err)
			}
			c.Header = h
			continue
		}
		e, err := parseEvent(b)
		if err == nil && len(c.Events) > 0 && e.Time < c.Events[len(c.Events)-1].Time {
			err = fmt.Errorf("time %s is before the previous event's %s", seconds(e.Time), seconds(c.Events[len(c.Events)-1].Time))
		}
		if err != nil {
			return nil, fmt.Errorf("cast line %d: %w", line, err)
		}
		c.Events = append(c.Events, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("cast line %d: longer than %d bytes", line+1, MaxLine)
		}
		return nil, fmt.Errorf("cast line %d: %w", line+1, err)
	}
	if line == 0 {
		return nil, errors.New("cast line 1: empty file, want an asciicast v2 header")
	}
	return c, nil
}

func parseHeader(b []byte) (Header, error) {
	var h Header
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return h, errors.New("not an asciicast v2 header: want a JSON object")
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("header: %v", err)
	}
	switch {
	case h.Version != 2:
		return h, fmt.Errorf("header: version is %d, want 2", h.Version)
	case h.Width < 1 || h.Height < 1:
		return h, fmt.Errorf("header: size %dx%d, want a positive width and height", h.Width, h.Height)
	case h.Duration < 0 || h.IdleTimeLimit < 0:
		return h, errors.New("header: negative duration or idle_time_limit")
	}
	return h, nil
}

func parseEvent(b []byte) (Event, error) {
	var e Event
	var parts []json.RawMessage
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '[' {
		return e, errors.New("want an event [time, code, data]")
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return e, fmt.Errorf("event: %v", err)
	}
	if len(parts) != 3 {
		return e, fmt.Errorf("event has %d elements, want 3: [time, code, data]", len(parts))
	}
	var t float64
	if err := unmarshal(parts[0], &t); err != nil {
		return e, fmt.Errorf("event time %s: want a number of seconds", parts[0])
	}
	if t < 0 || t > maxSeconds || math.IsNaN(t) {
		return e, fmt.Errorf("event time %s: want 0 to %g seconds", parts[0], float64(maxSeconds))
	}
	if err := unmarshal(parts[1], &e.Code); err != nil {
		return e, fmt.Errorf("event code %s: want a string", parts[1])
	}
	if err := unmarshal(parts[2], &e.Data); err != nil {
		return e, fmt.Errorf("event data %.40s: want a string", parts[2])
	}
	switch e.Code {
	case Output, Input, Marker:
	case Resize:
		if !resizeRE.MatchString(e.Data) {
			return e, fmt.Errorf("resize data %q: want COLSxROWS", e.Data)
		}
	default:
		return e, fmt.Errorf("event code %q: want o, i, m or r", e.Code)
	}
	e.Time = time.Duration(math.Round(t * float64(time.Second)))
	return e, nil
}

// unmarshal is json.Unmarshal that does not take null for a value (it
// would leave v zero).
func unmarshal(b []byte, v any) error {
	if string(b) == "null" {
		return errors.New("null")
	}
	return json.Unmarshal(b, v)
}
