package client_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/client/clienttest"
	"github.com/airlockhq/airlock/client/clienttest/suite"
)

func newClient(t *testing.T) (*client.Client, *clienttest.Server) {
	t.Helper()
	srv := clienttest.NewServer(t)
	return client.New(srv.URL+"/", srv.AdminKey), srv
}

// TestSuite runs the client's shared suite against the fake;
// internal/api's TestClientSuite runs it against the fake and a real
// server, checking their answers against openapi.json.
func TestSuite(t *testing.T) {
	suite.Run(t, func(t *testing.T) suite.Server {
		srv := clienttest.NewServer(t)
		srv.SetExec(suite.Shell)
		return suite.Server{URL: srv.URL + "/", AdminKey: srv.AdminKey}
	})
}

// TestExecStreamIsIncremental: output reaches the writer while the command
// still runs, not when it ends.
func TestExecStreamIsIncremental(t *testing.T) {
	c, srv := newClient(t)
	got := make(chan []byte)
	srv.SetExec(func(_ []string, stdout, _ io.Writer) (int, int) {
		stdout.Write([]byte("first"))
		<-got // the client has it; only then does the command go on
		stdout.Write([]byte("second"))
		return 0, 0
	})
	ctx := context.Background()
	sb, _ := c.CreateSandbox(ctx, client.CreateRequest{})
	w := &signalWriter{first: got}
	if _, err := c.ExecStream(ctx, sb.ID, client.ExecRequest{Cmd: []string{"x"}}, w, nil); err != nil {
		t.Fatal(err)
	}
	if w.buf.String() != "firstsecond" {
		t.Errorf("stdout = %q", w.buf.String())
	}
}

// signalWriter closes first after its first write.
type signalWriter struct {
	buf   bytes.Buffer
	first chan []byte
}

func (w *signalWriter) Write(p []byte) (int, error) {
	if w.buf.Len() == 0 {
		defer close(w.first)
	}
	return w.buf.Write(p)
}
