// Package contract checks answers of the Airlock API against its OpenAPI
// document (internal/api/openapi.json, served at /v1/openapi.json): every
// status, content type and JSON body a test provokes must be one the
// document promises for that operation, and an error must carry the Error
// body. Tests put it around a server's handler (Handler) or a client's
// transport (Transport); it never changes an answer, it only fails the
// test that provoked one the document does not describe.
//
// Streams (server-sent events, NDJSON, tar, gzip, octet bodies, WebSocket
// upgrades) are checked for status and content type only: their bodies
// are not one JSON value, and buffering them would change how they flow.
package contract

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// Doc is a parsed OpenAPI document, safe for concurrent use.
type Doc struct {
	model    *v3.Document
	v        validator.Validator
	errorDoc *base.Schema
	schemas  schema_validation.SchemaValidator
}

// maxJSON bounds the JSON body a check buffers: no answer of the API is
// near it, and a body past it is reported, not silently cut.
const maxJSON = 32 << 20

var (
	parsedMu sync.Mutex
	parsed   = map[[32]byte]*Doc{}
)

// Parse parses spec, once per content per process: building the model
// and compiling its schemas costs far more than any check.
func Parse(spec []byte) (*Doc, error) {
	sum := sha256.Sum256(spec)
	parsedMu.Lock()
	defer parsedMu.Unlock()
	if d := parsed[sum]; d != nil {
		return d, nil
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("parse openapi document: %w", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("build openapi model: %w", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapi validator: %w", errors.Join(errs...))
	}
	d := &Doc{model: &m.Model, v: v, schemas: schema_validation.NewSchemaValidator()}
	if m.Model.Components != nil && m.Model.Components.Schemas != nil {
		if p := m.Model.Components.Schemas.GetOrZero("Error"); p != nil {
			d.errorDoc = p.Schema()
		}
	}
	if d.errorDoc == nil {
		return nil, errors.New("openapi document: no Error schema in components")
	}
	parsed[sum] = d
	return d, nil
}

// Check says how an answer to r (status, header, and body, which is read
// only when the content type is application/json) departs from the
// document, or nil if it does not. An answer to HEAD is checked as the GET
// it stands for, without a body.
func (d *Doc) Check(r *http.Request, status int, header http.Header, body []byte) error {
	probe := r.Clone(r.Context())
	probe.Body, probe.ContentLength = http.NoBody, 0
	head := probe.Method == http.MethodHead
	if head {
		probe.Method = http.MethodGet
	}
	ct := header.Get("Content-Type")
	media, _, _ := mime.ParseMediaType(ct)
	op, pattern := d.operation(probe)
	if op == nil {
		// No operation: the catch-all's 404 or 405, or a refusal before
		// routing (a NUL in the path); whatever it is, it is an error.
		if status < 400 || status > 499 {
			return fmt.Errorf("status %d for an undocumented operation", status)
		}
		if media != "application/json" {
			return fmt.Errorf("error %d with Content-Type %q, want application/json", status, ct)
		}
		if ok, errs := d.schemas.ValidateSchemaBytes(d.errorDoc, body); !ok {
			return fmt.Errorf("error %d body %s is not an Error: %s", status, clip(body), describe(errs))
		}
		return nil
	}
	resp := op.Responses.Codes.GetOrZero(strconv.Itoa(status))
	if resp == nil {
		resp = op.Responses.Codes.GetOrZero(fmt.Sprintf("%dXX", status/100))
	}
	if resp == nil {
		resp = op.Responses.Default
	}
	if resp == nil {
		return fmt.Errorf("status %d is not documented for %s %s", status, probe.Method, pattern)
	}
	if resp.Content == nil || resp.Content.Len() == 0 {
		return nil // no body (204), or one the document leaves open (a proxy's)
	}
	if _, ok := resp.Content.Get(media); !ok {
		var want []string
		for k := range resp.Content.KeysFromOldest() {
			want = append(want, k)
		}
		return fmt.Errorf("status %d with Content-Type %q, documented: %s", status, ct, strings.Join(want, ", "))
	}
	if head || media != "application/json" {
		return nil
	}
	if status >= 400 {
		// Every error is the Error body, whatever the response says.
		if ok, errs := d.schemas.ValidateSchemaBytes(d.errorDoc, body); !ok {
			return fmt.Errorf("error %d body %s is not an Error: %s", status, clip(body), describe(errs))
		}
	}
	res := &http.Response{StatusCode: status, Header: header, Body: readCloser{bytes.NewReader(body)}, Request: probe}
	if ok, errs := d.v.ValidateHttpResponse(probe, res); !ok {
		return fmt.Errorf("body %s: %s", clip(body), describe(errs))
	}
	return nil
}

// operation finds what the document says of r's method and path, or nil.
// A documented path that ends in "/" stands, as in http.ServeMux, for the
// whole tree below it (the port proxy's).
func (d *Doc) operation(r *http.Request) (*v3.Operation, string) {
	p := r.URL.Path
	for {
		probe := r.Clone(r.Context())
		probe.URL.Path, probe.URL.RawPath = p, ""
		item, _, pattern := paths.FindPath(probe, d.model, nil)
		if item != nil && (p == r.URL.Path || strings.HasSuffix(pattern, "/")) {
			op := item.GetOperations().GetOrZero(strings.ToLower(r.Method))
			if op == nil || op.Responses == nil {
				return nil, pattern
			}
			*r.URL = *probe.URL
			return op, pattern
		}
		i := strings.LastIndex(strings.TrimSuffix(p, "/"), "/")
		if i <= 0 {
			return nil, ""
		}
		p = p[:i+1]
	}
}

func describe(errs []*liberrors.ValidationError) string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Message)
		if e.Reason != "" && e.Reason != e.Message {
			b.WriteString(": " + e.Reason)
		}
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, " [%s at %q]", f.Reason, f.FieldPath)
		}
	}
	return b.String()
}

func clip(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
