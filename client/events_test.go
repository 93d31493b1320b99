package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/client"
)

// Events sends Last-Event-ID, passes events in order and reports where to
// resume when the server drops the stream.
func TestEventsResumeAndDrop(t *testing.T) {
	var gotLast, gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotLast, gotQuery = r.Header.Get("Last-Event-ID"), r.URL.RawQuery
		w.Header().Set("Content-Type", "text/event-stream")
		for id := 8; id <= 9; id++ {
			fmt.Fprintf(w, ": keep-alive\n\nid: %d\nevent: exec.exited\ndata: {\"id\":%d,\"type\":\"exec.exited\",\"sandbox_id\":\"sb_1\",\"data\":{\"exit_code\":0}}\n\n", id, id)
		}
		io.WriteString(w, "event: dropped\ndata: {\"code\":\"slow_consumer\",\"message\":\"behind\"}\n\n")
	}))
	defer srv.Close()
	c := client.New(srv.URL, "alk_x")
	var ids []int64
	last, err := c.Events(context.Background(), client.EventsOptions{After: 7, Types: []string{client.EventExecExited}}, func(e client.Event) error {
		ids = append(ids, e.ID)
		return nil
	})
	if !errors.Is(err, client.ErrStreamDropped) || last != 9 {
		t.Errorf("last %d, err %v; want 9, ErrStreamDropped", last, err)
	}
	if d := cmp.Diff([]int64{8, 9}, ids); d != "" {
		t.Errorf("ids (-want +got):\n%s", d)
	}
	if gotLast != "7" || gotQuery != "type=exec.exited" {
		t.Errorf("Last-Event-ID %q, query %q", gotLast, gotQuery)
	}

	// FromStart asks for everything kept; a stream that just ends is
	// unexpected EOF, with the last id passed on.
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotLast, gotQuery = r.Header.Get("Last-Event-ID"), r.URL.RawQuery
		io.WriteString(w, "id: 1\nevent: sandbox.created\ndata: {\"id\":1,\"type\":\"sandbox.created\"}\n\n")
	})
	last, err = c.Events(context.Background(), client.EventsOptions{FromStart: true}, func(client.Event) error { return nil })
	if !errors.Is(err, io.ErrUnexpectedEOF) || last != 1 || gotQuery != "after=0" || gotLast != "" {
		t.Errorf("last %d, err %v, query %q, Last-Event-ID %q", last, err, gotQuery, gotLast)
	}
}
