package agent

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlockhq/airlock/internal/runtime"
)

func TestFrameRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("x"), MaxPayload+10)
	var b bytes.Buffer
	fw := newFrameWriter(&b)
	for _, p := range [][]byte{nil, []byte("hi"), big} {
		if err := fw.write(FrameData, p); err != nil {
			t.Fatal(err)
		}
	}
	type frame struct {
		Kind byte
		Len  int
	}
	var got []frame
	var buf []byte
	for b.Len() > 0 {
		k, p, err := readFrame(&b, &buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, frame{k, len(p)})
	}
	// A payload over the limit is split, never sent as one oversized frame.
	want := []frame{{'d', 0}, {'d', 2}, {'d', MaxPayload}, {'d', 10}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}

func TestReadRequest(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Request
		wantErr bool
	}{
		{"exec", `{"op":"exec","argv":["ls","-l"],"timeout_ms":5}` + "\n",
			Request{Op: "exec", Argv: []string{"ls", "-l"}, TimeoutMS: 5}, false},
		{"unknown field refused", `{"op":"exec","pty":true}` + "\n", Request{}, true},
		{"not json", "hello\n", Request{}, true},
		{"no newline", `{"op":"ping"}`, Request{}, true},
		{"too long", `{"op":"` + strings.Repeat("a", MaxRequest) + `"}` + "\n", Request{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readRequest(bufio.NewReader(strings.NewReader(tt.in)))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOversizedFrameRefused(t *testing.T) {
	in := []byte{'d', 0, 1, 0, 1} // 65537 bytes announced
	if _, _, err := readFrame(bytes.NewReader(in), new([]byte)); !errors.Is(err, errProtocol) {
		t.Errorf("readFrame = %v, want a protocol error", err)
	}
}

func TestErrorKinds(t *testing.T) {
	tests := []struct {
		code string
		is   []error
		not  []error
	}{
		{CodeNotFound, []error{runtime.ErrNotFound, fs.ErrNotExist}, []error{fs.ErrExist}},
		{CodeInvalid, []error{runtime.ErrInvalid}, []error{runtime.ErrNotFound}},
		{CodePermission, []error{fs.ErrPermission}, []error{runtime.ErrInvalid}},
		{CodeExists, []error{fs.ErrExist}, []error{fs.ErrNotExist}},
		{CodeNotDir, []error{syscall.ENOTDIR}, nil},
		{CodeIsDir, []error{syscall.EISDIR}, nil},
		{CodeNoSpace, []error{syscall.ENOSPC}, nil},
		{CodeInternal, nil, []error{runtime.ErrInvalid, runtime.ErrNotFound}},
	}
	for _, tt := range tests {
		err := error(&Error{Code: tt.code, Message: "m"})
		for _, k := range tt.is {
			if !errors.Is(err, k) {
				t.Errorf("%s is not %v", tt.code, k)
			}
		}
		for _, k := range tt.not {
			if errors.Is(err, k) {
				t.Errorf("%s is %v", tt.code, k)
			}
		}
	}
}

// FuzzDecode feeds arbitrary bytes to the agent's decoders: a request line
// followed by frames. They must never panic, never hand out a payload over
// the limit, and accept only requests that re-encode to the same value.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"op":"write","path":"/a","mode":420}` + "\nd\x00\x00\x00\x02hiz\x00\x00\x00\x00"))
	f.Add([]byte(`{"op":"exec","shell":"ls","env":{"A":"b"}}` + "\nd\xff\xff\xff\xff"))
	f.Add([]byte("{}\n\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReader(bytes.NewReader(data))
		req, err := readRequest(br)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := writeRequest(&b, req, false); err != nil {
			t.Fatalf("re-encode %+v: %v", req, err)
		}
		again, err := readRequest(bufio.NewReader(&b))
		if err != nil {
			t.Fatalf("decode re-encoded request: %v", err)
		}
		if diff := cmp.Diff(req, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		var buf []byte
		for {
			_, p, err := readFrame(br, &buf)
			if err != nil {
				return
			}
			if len(p) > MaxPayload {
				t.Fatalf("payload of %d bytes", len(p))
			}
		}
	})
}
