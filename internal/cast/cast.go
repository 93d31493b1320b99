// Package cast turns a sandbox's audit log into asciicast v2 recordings
// (https://docs.asciinema.org/manual/asciicast/v2/), the format asciinema
// and the console replay, and plays them back.
//
// A cast only ever shows what the log recorded: it never reaches into a
// live sandbox, and it never writes a byte the recording did not hold,
// except U+FFFD where recorded bytes were not UTF-8 (JSON strings cannot
// carry them) and, for commands that ran on pipes, the carriage return a
// terminal puts before each newline.
package cast

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ErrNotFound is returned when the session or command asked for does not
// occur in the log.
var ErrNotFound = errors.New("not found")

// Event codes of asciicast v2.
const (
	Output = "o" // data the terminal printed
	Input  = "i" // data typed at the terminal
	Marker = "m" // a label (a command's start, its exit status)
	Resize = "r" // the terminal's new size, "COLSxROWS"
)

// Default terminal size, when the log does not say.
const (
	DefaultWidth  = 80
	DefaultHeight = 24
)

// Cast is an asciicast v2 recording.
type Cast struct {
	Header Header
	Events []Event // in time order
}

// Header is the first line of a cast file.
type Header struct {
	Version   int     `json:"version"` // always 2
	Width     int     `json:"width"`
	Height    int     `json:"height"`
	Timestamp int64   `json:"timestamp,omitempty"` // Unix seconds of the start
	Duration  float64 `json:"duration,omitempty"`  // seconds
	// IdleTimeLimit is a player's cap on pauses, in seconds.
	IdleTimeLimit float64           `json:"idle_time_limit,omitempty"`
	Command       string            `json:"command,omitempty"`
	Title         string            `json:"title,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Theme         *Theme            `json:"theme,omitempty"`
}

// Theme is a recording's terminal colours.
type Theme struct {
	Fg      string `json:"fg"`
	Bg      string `json:"bg"`
	Palette string `json:"palette"`
}

// Event is one line after the header: [time, code, data].
type Event struct {
	Time time.Duration // since the start of the recording
	Code string        // Output, Input, Marker or Resize
	Data string
}

// MarshalJSON writes the event as [seconds, code, data], the time with
// microsecond precision (the audit log's).
func (e Event) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode([]any{json.Number(seconds(e.Time)), e.Code, e.Data}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// seconds formats d as seconds with up to six decimals ("1.5", "0.000001").
func seconds(d time.Duration) string {
	s := strconv.FormatFloat(d.Round(time.Microsecond).Seconds(), 'f', 6, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// WriteTo writes c as a cast file: the header, then one event per line.
func (c *Cast) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 32<<10)
	enc := json.NewEncoder(bw)
	// Terminal output is full of <, > and &; \u003c helps no reader of a
	// cast file.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c.Header); err != nil {
		return cw.n, err
	}
	for _, e := range c.Events {
		if err := enc.Encode(e); err != nil {
			return cw.n, err
		}
	}
	err := bw.Flush()
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Text returns the concatenated data of the events with the code.
func (c *Cast) Text(code string) string {
	var b strings.Builder
	for _, e := range c.Events {
		if e.Code == code {
			b.WriteString(e.Data)
		}
	}
	return b.String()
}

// resizeData is a Resize event's data.
func resizeData(cols, rows int) string { return fmt.Sprintf("%dx%d", cols, rows) }
