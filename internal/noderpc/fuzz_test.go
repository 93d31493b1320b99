package noderpc

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/runtime"
)

// FuzzFrames feeds the frame reader, and the parsers of what frames
// carry, whatever a peer might send: none may panic, read a frame past
// its bound, or misread a job output frame.
func FuzzFrames(f *testing.F) {
	f.Add(append(frame(frameData, []byte("hello")), frame(frameEnd, nil)...))
	f.Add(frame(frameJob, appendJobOutput(nil, runtimeOutput("stderr", 7, 0, "x"))))
	f.Add(frame(frameError, []byte(`{"message":"m","kinds":["not_found","bogus"],"not_regular":{"Path":"/p","What":"a FIFO"}}`)))
	f.Add([]byte{'d', 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := frameReader{r: bytes.NewReader(b)}
		for {
			kind, p, err := fr.next()
			if err != nil {
				return
			}
			if len(p) > maxFrame {
				t.Fatalf("frame of %d bytes read", len(p))
			}
			switch kind {
			case frameJob:
				if o, err := decodeJobOutput(p); err == nil {
					if diff := cmp.Diff(p, appendJobOutput(nil, o)); diff != "" {
						t.Fatalf("job output does not round-trip\n%s", diff)
					}
				}
			case frameError:
				var we wireError
				if json.Unmarshal(p, &we) == nil && we.err().Error() != we.Message {
					t.Fatalf("error message %q, sent %q", we.err(), we.Message)
				}
			}
		}
	})
}

func runtimeOutput(stream string, offset, dropped int64, data string) runtime.JobOutput {
	return runtime.JobOutput{Stream: stream, Offset: offset, Dropped: dropped, Data: []byte(data)}
}
