package contract

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"sync"
	"testing"
)

// Handler serves with h and fails t with every answer the document does
// not describe: its method, path, status and what is wrong.
func (d *Doc) Handler(t testing.TB, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.hijacked {
			return // a WebSocket: the upgrade is the handler's own
		}
		if !rec.wrote {
			rec.WriteHeader(http.StatusOK)
		}
		if rec.header.Get("Content-Type") == "" && rec.sniff.Len() > 0 {
			// What net/http sends when the handler set no type.
			rec.header.Set("Content-Type", http.DetectContentType(rec.sniff.Bytes()))
		}
		d.report(t, r, rec.status, rec.header, rec.body.Bytes(), rec.tooLong)
	})
}

// Transport carries requests with rt (http.DefaultTransport if nil) and
// fails t with every answer the document does not describe. A JSON body
// is read whole and handed on as it came; a stream is passed through.
func (d *Doc) Transport(t testing.TB, rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err != nil {
			return resp, err
		}
		var body []byte
		tooLong := false
		if isJSON(resp.Header) && r.Method != http.MethodHead {
			body, err = io.ReadAll(io.LimitReader(resp.Body, maxJSON+1))
			resp.Body.Close()
			if err != nil {
				return nil, err
			}
			tooLong = len(body) > maxJSON
			resp.Body = io.NopCloser(bytes.NewReader(body))
		}
		d.report(t, r, resp.StatusCode, resp.Header, body, tooLong)
		return resp, nil
	})
}

func (d *Doc) report(t testing.TB, r *http.Request, status int, h http.Header, body []byte, tooLong bool) {
	err := d.Check(r, status, h, body)
	if err == nil && tooLong {
		err = fmt.Errorf("JSON body longer than %d bytes", maxJSON)
	}
	if err != nil {
		t.Errorf("openapi.json: %s %q answered %d: %v", r.Method, r.URL.Path, status, err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func isJSON(h http.Header) bool {
	media, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return media == "application/json"
}

// recorder passes an answer through and keeps what Check needs: the
// status and header when they are sent, the body when it is JSON, and
// the first bytes for the type net/http would sniff.
type recorder struct {
	http.ResponseWriter
	mu       sync.Mutex
	wrote    bool
	hijacked bool
	status   int
	header   http.Header
	json     bool
	tooLong  bool
	body     bytes.Buffer
	sniff    bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	r.mu.Lock()
	if !r.wrote && code >= 200 {
		r.wrote, r.status = true, code
		r.header = r.ResponseWriter.Header().Clone()
		r.json = isJSON(r.header)
	}
	r.mu.Unlock()
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	wrote := r.wrote
	r.mu.Unlock()
	if !wrote {
		r.WriteHeader(http.StatusOK)
	}
	r.mu.Lock()
	if n := 512 - r.sniff.Len(); n > 0 {
		r.sniff.Write(p[:min(n, len(p))])
	}
	if r.json {
		if r.body.Len()+len(p) > maxJSON {
			r.tooLong = true
		} else {
			r.body.Write(p)
		}
	}
	r.mu.Unlock()
	return r.ResponseWriter.Write(p)
}

func (r *recorder) Flush() {
	r.mu.Lock()
	wrote := r.wrote
	r.mu.Unlock()
	if !wrote {
		r.WriteHeader(http.StatusOK)
	}
	http.NewResponseController(r.ResponseWriter).Flush()
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.mu.Lock()
	r.hijacked = true
	r.mu.Unlock()
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
