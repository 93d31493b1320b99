package client

import (
	"testing"
	"time"
)

// TestRequestBodiesKeepAngleBrackets: a request carries "<" and "&" as
// one byte each, so stdin full of them still fits the server's bound on
// a JSON body.
func TestRequestBodiesKeepAngleBrackets(t *testing.T) {
	b, err := marshal(ExecRequest{Cmd: []string{"cat"}, Stdin: "<a>&b", Timeout: time.Second})
	if err != nil || string(b) != `{"cmd":["cat"],"stdin":"<a>&b","timeout_s":1}` {
		t.Errorf("exec body %s, %v", b, err)
	}
}
