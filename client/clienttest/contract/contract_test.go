package contract

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// spec is a small document with what the API's has: closed objects, an
// Error body, a stream, a route without a body and a subtree.
const spec = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "paths": {
    "/things/{id}": {
      "get": {
        "responses": {
          "200": {"description": "a thing", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
          "404": {"description": "no thing", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        }
      },
      "delete": {"responses": {"204": {"description": "gone"}}}
    },
    "/stream": {
      "get": {"responses": {"200": {"description": "events", "content": {"text/event-stream": {"schema": {"type": "string"}}}}}}
    },
    "/proxy/": {
      "get": {"responses": {"default": {"description": "whatever the upstream answers"}}}
    }
  },
  "components": {
    "schemas": {
      "Thing": {"type": "object", "additionalProperties": false, "required": ["id", "n"],
        "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}},
      "Error": {"type": "object", "additionalProperties": false, "required": ["error"],
        "properties": {"error": {"type": "object", "additionalProperties": false, "required": ["code", "message"],
          "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}
    }
  }
}`

const errBody = `{"error":{"code":"not_found","message":"no"}}`

func TestCheck(t *testing.T) {
	d, err := Parse([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path string
		status             int
		ctype, body        string
		want               string // a substring of the error; "" for none
	}{
		{"as documented", "GET", "/things/a", 200, "application/json", `{"id":"a","n":1}`, ""},
		{"with a charset", "GET", "/things/a", 200, "application/json; charset=utf-8", `{"id":"a","n":1}`, ""},
		{"a field the document lacks", "GET", "/things/a", 200, "application/json", `{"id":"a","n":1,"new":true}`, "new"},
		{"a wrong type", "GET", "/things/a", 200, "application/json", `{"id":"a","n":"1"}`, "$.n"},
		{"a missing field", "GET", "/things/a", 200, "application/json", `{"id":"a"}`, "n"},
		{"an undocumented status", "GET", "/things/a", 500, "application/json", errBody, "status 500 is not documented"},
		{"an undocumented type", "GET", "/things/a", 200, "text/plain", "a", "text/plain"},
		{"an error that is not the Error body", "GET", "/things/a", 404, "application/json", `{"message":"no"}`, "not an Error"},
		{"a documented error", "GET", "/things/a", 404, "application/json", errBody, ""},
		{"no body", "DELETE", "/things/a", 204, "", "", ""},
		{"HEAD as GET, no body", "HEAD", "/things/a", 200, "application/json", "", ""},
		{"a stream: its type only", "GET", "/stream", 200, "text/event-stream", "data: {not json}\n\n", ""},
		{"a stream of the wrong type", "GET", "/stream", 200, "application/json", `"x"`, "text/event-stream"},
		{"a subtree path", "GET", "/proxy/a/b", 418, "text/html", "<p>", ""},
		{"no route, the Error body", "GET", "/nope", 404, "application/json", errBody, ""},
		{"no method, the Error body", "PUT", "/things/a", 405, "application/json", errBody, ""},
		{"no route, in text", "GET", "/nope", 404, "text/plain", "404 page not found", "want application/json"},
		{"no route, a success", "GET", "/nope", 200, "application/json", `{}`, "undocumented operation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.ctype != "" {
				h.Set("Content-Type", tc.ctype)
			}
			err := d.Check(httptest.NewRequest(tc.method, tc.path, nil), tc.status, h, []byte(tc.body))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// errorLog is a testing.TB that keeps the errors reported to it.
type errorLog struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *errorLog) Helper() {}

func (r *errorLog) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *errorLog) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.errs
	r.errs = nil
	return out
}

// TestWrappers: a server wrapped by Handler and a client by Transport
// report what Check refuses, with method, path and status, and pass the
// answer on unchanged, a stream as it flows.
func TestWrappers(t *testing.T) {
	d, err := Parse([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	served := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/things/a":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"a","n":1}`)
		case "/things/b":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"b","n":1,"new":2}`)
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: 1\n\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "data: 2\n\n")
		default:
			http.NotFound(w, r) // text/plain: not the Error body
		}
	})
	rec := &errorLog{TB: t}
	srv := httptest.NewServer(d.Handler(rec, served))
	defer srv.Close()
	viaClient := &errorLog{TB: t}
	plain := httptest.NewServer(served)
	defer plain.Close()
	hc := &http.Client{Transport: d.Transport(viaClient, nil)}
	for _, tc := range []struct {
		path, body, want string
	}{
		{"/things/a", `{"id":"a","n":1}`, ""},
		{"/things/b", `{"id":"b","n":1,"new":2}`, `GET "/things/b" answered 200: body`},
		{"/stream", "data: 1\n\ndata: 2\n\n", ""},
		{"/gone", "404 page not found\n", `GET "/gone" answered 404: error 404 with Content-Type "text/plain; charset=utf-8"`},
	} {
		for _, w := range []struct {
			name string
			url  string
			hc   *http.Client
			rec  *errorLog
		}{{"Handler", srv.URL, srv.Client(), rec}, {"Transport", plain.URL, hc, viaClient}} {
			resp, err := w.hc.Get(w.url + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The body ends once the handler, and so its check, has.
			if string(b) != tc.body {
				t.Errorf("%s %s: body %q, want %q", w.name, tc.path, b, tc.body)
			}
			errs := w.rec.take()
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("%s %s: %q", w.name, tc.path, errs)
			case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0], tc.want)):
				t.Errorf("%s %s: %q, want one error with %q", w.name, tc.path, errs, tc.want)
			}
		}
	}
}
