package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
)

// spool is a receiver that keeps what it is sent, as a node's spool does;
// failAt, when above 0, fails its import call (unavailable, as a broken
// request body does) once it holds that many bytes.
type spool struct {
	want   []byte
	have   []byte
	failAt int
}

func (s *spool) imp(r io.Reader) (int64, bool, error) {
	buf := make([]byte, 1000)
	for {
		n, err := r.Read(buf)
		s.have = append(s.have, buf[:n]...)
		if s.failAt > 0 && len(s.have) >= s.failAt {
			s.failAt = 0
			return 0, false, fmt.Errorf("%w: node could not be reached: stream reset", ErrUnavailable)
		}
		if err == io.EOF {
			return int64(len(s.have)), len(s.have) == len(s.want), nil
		}
		if err != nil {
			return int64(len(s.have)), false, nil
		}
	}
}

// TestMoveStream: a transfer cut on the sending side or on the receiving
// side resumes at what the receiver holds and delivers the same bytes; a
// sender that refuses ends it at once; one that keeps failing is given
// up after MaxTransferTries.
func TestMoveStream(t *testing.T) {
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789"), 1000)
	export := func(cutAt int) func(off int64, w io.Writer) error {
		return func(off int64, w io.Writer) error {
			end := len(data)
			if cutAt > 0 {
				end, cutAt = cutAt, 0
			}
			if _, err := w.Write(data[off:end]); err != nil {
				return err
			}
			if end < len(data) {
				return fmt.Errorf("%w: connection reset", ErrUnavailable)
			}
			return nil
		}
	}
	for _, tc := range []struct {
		name        string
		cutAt       int // the sender breaks here
		failAt      int // the receiver's call breaks here
		wantResumed int
	}{
		{"whole", 0, 0, 0},
		{"sender cut", 3000, 0, 1},
		{"receiver cut", 0, 5000, 1},
	} {
		s := &spool{want: data, failAt: tc.failAt}
		n, resumed, err := MoveStream(ctx, export(tc.cutAt), s.imp)
		if err != nil || n != int64(len(data)) || resumed != tc.wantResumed || !bytes.Equal(s.have, data) {
			t.Errorf("%s: %d bytes, resumed %d, equal %v: %v", tc.name, n, resumed, bytes.Equal(s.have, data), err)
		}
	}
	s := &spool{want: data}
	refuse := func(int64, io.Writer) error { return fmt.Errorf("%w: template replaced", ErrConflict) }
	if _, resumed, err := MoveStream(ctx, refuse, s.imp); !errors.Is(err, ErrConflict) || resumed != 0 {
		t.Errorf("a sender that refuses: resumed %d, %v", resumed, err)
	}
	broken := func(int64, io.Writer) error { return fmt.Errorf("%w: node lost", ErrUnavailable) }
	if _, resumed, err := MoveStream(ctx, broken, (&spool{want: data}).imp); !errors.Is(err, ErrUnavailable) || resumed != MaxTransferTries {
		t.Errorf("a sender that keeps failing: resumed %d, %v", resumed, err)
	}
}
