package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// oaDoc is the part of openapi.json these tests read.
type oaDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Responses map[string]oaResponse `json:"responses"`
	} `json:"components"`
}

type oaOperation struct {
	RequestBody *struct {
		Content map[string]json.RawMessage `json:"content"`
	} `json:"requestBody"`
	Responses map[string]oaResponse `json:"responses"`
}

type oaResponse struct {
	Ref     string `json:"$ref"`
	Content map[string]struct {
		Schema struct {
			Ref string `json:"$ref"`
		} `json:"schema"`
	} `json:"content"`
}

// TestOpenAPIErrorResponses: every operation documents the errors that
// the code every route shares can answer, and every error it documents is
// the Error body: a client generated from the document knows each status
// it can get and how to read it.
func TestOpenAPIErrorResponses(t *testing.T) {
	var doc oaDoc
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range errorGaps(doc) {
		t.Error(p)
	}
	// Not vacuous: a missing 401 and an error that is not the Error body
	// are reported.
	var op map[string]any
	json.Unmarshal(doc.Paths["/v1/sandboxes/{id}"]["get"], &op)
	responses := op["responses"].(map[string]any)
	delete(responses, "401")
	responses["404"] = map[string]any{"description": "text", "content": map[string]any{"text/plain": map[string]any{}}}
	doc.Paths["/v1/sandboxes/{id}"]["get"], _ = json.Marshal(op)
	if got := errorGaps(doc); len(got) != 3 { // no 401; 404 twice: missing as Error, and not the Error body
		t.Errorf("with GET /v1/sandboxes/{id} broken: %q", got)
	}
}

// errorGaps lists, for every route, the errors the code all routes share
// can answer that doc does not document, and the errors it documents that
// are not the Error body.
func errorGaps(doc oaDoc) []string {
	var out []string
	for _, rt := range routes {
		var op oaOperation
		if err := json.Unmarshal(doc.Paths[rt.path][strings.ToLower(rt.method)], &op); err != nil {
			out = append(out, fmt.Sprintf("%s %s: %v", rt.method, rt.path, err))
			continue
		}
		want := map[int]string{400: "refuseNUL: a NUL byte in the path or query"}
		if rt.access != public {
			want[401] = "authorize: no or a bad credential"
			want[403] = "authorize: the wrong kind of credential, or a console request from another origin"
			want[500] = "authorize: the store failed"
			want[503] = "a replica that knows no leader yet, or a store or node that cannot answer"
		}
		if rt.access == sandboxRoute || rt.access == sandboxKeyOnly {
			want[404] = "authorize: a token of another sandbox"
		}
		if op.RequestBody != nil && op.RequestBody.Content["application/json"] != nil {
			want[400], want[413], want[415] = "readJSON: a bad body", "readJSON: a body over the limit", "readJSON: not application/json"
		}
		for status, why := range want {
			if r, ok := op.Responses[strconv.Itoa(status)]; !ok || isErrorResponse(doc, r) != nil {
				out = append(out, fmt.Sprintf("%s %s: no %d Error response (%s)", rt.method, rt.path, status, why))
			}
		}
		for code, resp := range op.Responses {
			if status, _ := strconv.Atoi(code); status < 400 {
				continue
			}
			if err := isErrorResponse(doc, resp); err != nil {
				out = append(out, fmt.Sprintf("%s %s: %s: %v", rt.method, rt.path, code, err))
			}
		}
	}
	return out
}

func isErrorResponse(doc oaDoc, r oaResponse) error {
	if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
		r, ok = doc.Components.Responses[name]
		if !ok {
			return fmt.Errorf("no response %s", name)
		}
	}
	if len(r.Content) != 1 || r.Content["application/json"].Schema.Ref != "#/components/schemas/Error" {
		return fmt.Errorf("not the Error body alone: %+v", r.Content)
	}
	return nil
}

// TestOpenAPISchemasClosed: every object schema of the document says
// whether it takes properties it does not list, so that a field added to
// a Go struct and not to the document fails the tests that see it
// (CheckedHandler). An allOf's members are open and the allOf is closed
// with unevaluatedProperties; a member used on its own is closed where it
// is used.
func TestOpenAPISchemasClosed(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range openSchemas(doc) {
		t.Error(p)
	}
	// Not vacuous: an object schema left open, and an allOf member used
	// open, are reported.
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	delete(schemas["Sandbox"].(map[string]any), "additionalProperties")
	delete(schemas["TaskArtifactList"].(map[string]any)["properties"].(map[string]any)["artifacts"].(map[string]any)["items"].(map[string]any), "unevaluatedProperties")
	if got := openSchemas(doc); len(got) != 2 {
		t.Errorf("with two schemas opened: %q", got)
	}
}

// openSchemas lists the schemas of doc that do not say whether they take
// properties they do not list.
func openSchemas(doc map[string]any) []string {
	var out []string
	bases := map[string]bool{} // schemas that are members of an allOf
	walkSchemas(doc, "#", false, func(s map[string]any, at string, member bool) {
		if ref, _ := s["$ref"].(string); member && ref != "" {
			bases[ref] = true
		}
	})
	walkSchemas(doc, "#", false, func(s map[string]any, at string, member bool) {
		_, ap := s["additionalProperties"]
		_, up := s["unevaluatedProperties"]
		ref, _ := s["$ref"].(string)
		switch {
		case s["allOf"] != nil && s["unevaluatedProperties"] != false:
			out = append(out, at+": an allOf without unevaluatedProperties: false")
		case ref != "" && bases[ref] && !member && !up:
			out = append(out, at+": "+ref+" is open (a member of an allOf); close it here with unevaluatedProperties: false")
		case isObjectSchema(s) && !member && !bases[at] && !ap && !up:
			out = append(out, at+": an object schema that does not say additionalProperties")
		}
	})
	return out
}

func isObjectSchema(s map[string]any) bool {
	switch ty := s["type"].(type) {
	case string:
		if ty == "object" {
			return true
		}
	case []any:
		if slices.Contains(ty, any("object")) {
			return true
		}
	}
	return s["properties"] != nil
}

// walkSchemas calls f on every map below v; member says whether it is
// one of an allOf's.
func walkSchemas(v any, at string, member bool, f func(map[string]any, string, bool)) {
	switch v := v.(type) {
	case map[string]any:
		f(v, at, member)
		for k, c := range v {
			if k == "allOf" {
				for i, m := range c.([]any) {
					walkSchemas(m, at+"/allOf/"+strconv.Itoa(i), true, f)
				}
				continue
			}
			walkSchemas(c, at+"/"+k, false, f)
		}
	case []any:
		for i, c := range v {
			walkSchemas(c, at+"/"+strconv.Itoa(i), false, f)
		}
	}
}
