package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// TestOpenAPIMatchesRoutes: the routes the mux serves (the same table
// registers them) and the operations of openapi.json are the same set.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	var inDoc, served []string
	for p, item := range doc.Paths {
		for m := range item {
			if m == "parameters" || m == "summary" || m == "description" {
				continue
			}
			inDoc = append(inDoc, strings.ToUpper(m)+" "+p)
		}
	}
	for _, r := range routes {
		served = append(served, r.method+" "+r.path)
	}
	sort.Strings(inDoc)
	sort.Strings(served)
	if d := cmp.Diff(served, inDoc); d != "" {
		t.Errorf("routes (-served +openapi.json):\n%s", d)
	}
}

// TestOpenAPIValid checks the document against the OpenAPI 3.1 schema.
func TestOpenAPIValid(t *testing.T) {
	if ok, err := validateDoc(t, openAPIDoc); !ok || err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI 3.1 document: %v", err)
	}
	// The validator is not vacuous: a parameter in a place that does not
	// exist is refused.
	broken := bytes.Replace(openAPIDoc, []byte(`"in": "path"`), []byte(`"in": "body"`), 1)
	if ok, _ := validateDoc(nil, broken); ok {
		t.Error("the validator accepts a parameter in the body")
	}
}

func validateDoc(t *testing.T, spec []byte) (bool, error) {
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err != nil {
		return false, err
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		return false, fmt.Errorf("version %q", v)
	}
	if _, err := doc.BuildV3Model(); err != nil {
		return false, err
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return false, errors.Join(errs...)
	}
	ok, verrs := v.ValidateDocument()
	if t != nil {
		for _, e := range verrs {
			t.Errorf("%s: %s", e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s (line %d)", se.Reason, se.FieldPath, se.Line)
			}
		}
	}
	return ok, nil
}
