package cast

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sample() *Cast {
	return &Cast{
		Header: Header{Version: 2, Width: 100, Height: 30, Timestamp: 1772600767, Duration: 2.5,
			Title: "session ses_1", Command: "/bin/bash", Env: map[string]string{"SHELL": "/bin/bash"}},
		Events: []Event{
			ev(0, "o", "$ "),
			ev(0.001, "i", "l"),
			ev(1234.5678, "m", "ls <a> & 'b'"),
			ev(1500, "o", "é€😀 \x1b[1mbold\x1b[0m\r\n\u2028\"\\\x00"),
			ev(2000, "r", "120x40"),
			ev(2500, "o", ""),
		},
	}
}

func TestWriteTo(t *testing.T) {
	var buf bytes.Buffer
	n, err := sample().WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("WriteTo returned %d, wrote %d bytes", n, buf.Len())
	}
	want := `{"version":2,"width":100,"height":30,"timestamp":1772600767,"duration":2.5,"command":"/bin/bash","title":"session ses_1","env":{"SHELL":"/bin/bash"}}
[0,"o","$ "]
[0.000001,"i","l"]
[1.234568,"m","ls <a> & 'b'"]
[1.5,"o","é€😀 \u001b[1mbold\u001b[0m\r\n\u2028\"\\\u0000"]
[2,"r","120x40"]
[2.5,"o",""]
`
	if d := cmp.Diff(want, buf.String()); d != "" {
		t.Errorf("cast file (-want +got):\n%s", d)
	}
}

func TestParseRoundTrip(t *testing.T) {
	c := sample()
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// The file keeps microseconds.
	c.Events[2].Time = c.Events[2].Time.Round(time.Microsecond)
	if d := cmp.Diff(c, got); d != "" {
		t.Errorf("parsed (-wrote +read):\n%s", d)
	}
}

func TestParseAccepts(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"header only, no newline", `{"version":2,"width":1,"height":1}`},
		{"unknown header field, theme", `{"version":2,"width":80,"height":24,"x-custom":[1],"theme":{"fg":"#fff","bg":"#000","palette":"#000:#111"}}` + "\n"},
		{"CRLF lines, spaces, exponent", "{\"version\":2,\"width\":80,\"height\":24}\r\n [ 1e-3 , \"o\" , \"a\" ] \r\n"},
		{"equal times", `{"version":2,"width":80,"height":24}` + "\n" + `[1,"o","a"]` + "\n" + `[1,"m",""]` + "\n"},
	} {
		if _, err := Parse(strings.NewReader(tc.file)); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestParseRejects(t *testing.T) {
	const h = `{"version":2,"width":80,"height":24}` + "\n"
	for _, tc := range []struct{ name, file, want string }{
		{"empty file", "", "cast line 1: empty file"},
		{"v1 file", `{"version":1,"width":80,"height":24,"stdout":[]}`, "cast line 1: header: version is 1, want 2"},
		{"no version", `{"width":80,"height":24}`, "version is 0"},
		{"header is an array", `[2,80,24]`, "cast line 1: not an asciicast v2 header"},
		{"header not JSON", `{"version":2,`, "cast line 1: header:"},
		{"zero width", `{"version":2,"width":0,"height":24}`, "cast line 1: header: size 0x24"},
		{"no height", `{"version":2,"width":80}`, "size 80x0"},
		{"width a string", `{"version":2,"width":"80","height":24}`, "cast line 1: header:"},
		{"fraction width", `{"version":2,"width":80.5,"height":24}`, "cast line 1: header:"},
		{"negative duration", `{"version":2,"width":80,"height":24,"duration":-1}`, "negative duration"},
		{"blank line", h + `[0,"o","a"]` + "\n\n" + `[1,"o","b"]`, "cast line 3: want an event"},
		{"object event", h + `{"t":0}`, "cast line 2: want an event"},
		{"two elements", h + `[0,"o"]`, "cast line 2: event has 2 elements, want 3"},
		{"four elements", h + `[0,"o","a","b"]`, "event has 4 elements"},
		{"time a string", h + `["0","o","a"]`, `cast line 2: event time "0": want a number`},
		{"negative time", h + `[-1,"o","a"]`, "cast line 2: event time -1: want 0 to"},
		{"huge time", h + `[1e300,"o","a"]`, "event time 1e300"},
		{"time goes back", h + `[2,"o","a"]` + "\n" + `[1,"o","b"]`, "cast line 3: time 1 is before the previous event's 2"},
		{"unknown code", h + `[0,"x","a"]`, `cast line 2: event code "x": want o, i, m or r`},
		{"code a number", h + `[0,1,"a"]`, "event code 1: want a string"},
		{"data a number", h + `[0,"o",1]`, "event data 1: want a string"},
		{"data null", h + `[0,"o",null]`, "cast line 2: event data null: want a string"},
		{"time null", h + `[null,"o","a"]`, "cast line 2: event time null: want a number"},
		{"resize without x", h + `[0,"r","80"]`, `cast line 2: resize data "80": want COLSxROWS`},
		{"resize zero", h + `[0,"r","0x24"]`, "resize data"},
		{"resize spaces", h + `[0,"r"," 80x24"]`, "resize data"},
		{"trailing garbage", h + `[0,"o","a"] x`, "cast line 2: event:"},
		{"bad JSON", h + `[0,"o","a]`, "cast line 2: event:"},
	} {
		_, err := Parse(strings.NewReader(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.want)
		}
	}
}

func TestParseLongLine(t *testing.T) {
	file := `{"version":2,"width":80,"height":24}` + "\n" + `[0,"o","` + strings.Repeat("a", MaxLine) + `"]` + "\n"
	_, err := Parse(strings.NewReader(file))
	if err == nil || !strings.Contains(err.Error(), "cast line 2: longer than") {
		t.Errorf("error %v, want line 2 too long", err)
	}
}

// FuzzParse feeds Parse arbitrary files: it must not panic, and what it
// accepts must write out to a file it accepts again, unchanged.
func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	sample().WriteTo(&buf)
	f.Add(buf.String())
	f.Add(`{"version":2,"width":80,"height":24}` + "\n" + `[0.5,"r","1x1"]`)
	f.Add("{\"version\":2,\"width\":80,\"height\":24}\r\n[1e-7,\"o\",\"\\ud800\"]\n")
	f.Fuzz(func(t *testing.T, file string) {
		c, err := Parse(strings.NewReader(file))
		if err != nil {
			return
		}
		var w1, w2 bytes.Buffer
		if _, err := c.WriteTo(&w1); err != nil {
			t.Fatal(err)
		}
		c1, err := Parse(bytes.NewReader(w1.Bytes()))
		if err != nil {
			t.Fatalf("Parse of WriteTo's file: %v\n%s", err, w1.Bytes())
		}
		c1.WriteTo(&w2)
		if w1.String() != w2.String() {
			t.Errorf("written again differs:\n%s\n%s", w1.Bytes(), w2.Bytes())
		}
	})
}
