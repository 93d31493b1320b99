package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// readJSON reads a JSON request body of at most max bytes into v. With
// optional set, an empty body (with or without a Content-Type) leaves v as it
// is; otherwise an empty body is an error.
func readJSON(w http.ResponseWriter, r *http.Request, max int64, v any, optional bool) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		return err // *http.MaxBytesError maps to 413
	}
	if optional && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := checkJSONContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	return decodeBody(body, v)
}

func checkJSONContentType(ct string) error {
	if ct == "" {
		return errf(http.StatusUnsupportedMediaType, codeInvalid,
			"Content-Type is missing; want application/json")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return errf(http.StatusUnsupportedMediaType, codeInvalid,
			"Content-Type is %q; want application/json", ct)
	}
	return nil
}

// decodeBody decodes exactly one JSON object into v: unknown fields, a
// value that is not an object and anything after the object are refused,
// each with a message that names what is wrong.
func decodeBody(body []byte, v any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return invalidf("request body is empty; want a JSON object")
	}
	if trimmed[0] != '{' {
		return invalidf("request body is not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalidf("request body has data after the JSON object")
	}
	return nil
}

// jsonError turns an encoding/json error into a message for the client.
func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return invalidf("malformed JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(body)"
		}
		return invalidf("field %q: got a JSON %s, want %s", field, te.Value, jsonType(te.Type.Kind().String()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidf("malformed JSON: the body ends inside a value")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this one.
		return invalidf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return invalidf("malformed JSON: %v", err)
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "float32", "float64":
		return "a number"
	}
	if strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint") {
		return "an integer"
	}
	return kind
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	// "<", ">" and "&" go as they are, not as \u003c...: the answer is
	// JSON (nosniff), read by programs and people, never inlined in HTML.
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	// An encode error here means the client went away mid-answer.
	_ = enc.Encode(v)
}

// checkQuery refuses query parameters the route does not know, so that a
// typo (?recursiv=1) is an error instead of a silent default. A parameter
// given twice is refused too. prefixed lists name prefixes such as
// "metadata.".
func checkQuery(r *http.Request, known []string, prefixed ...string) error {
	for k, vs := range r.URL.Query() {
		ok := false
		for _, n := range known {
			ok = ok || k == n
		}
		for _, p := range prefixed {
			ok = ok || (strings.HasPrefix(k, p) && len(k) > len(p))
		}
		if !ok {
			return invalidf("unknown query parameter %q", k)
		}
		if len(vs) > 1 {
			return invalidf("query parameter %q is given %d times", k, len(vs))
		}
	}
	return nil
}

// queryBool reads a flag parameter: "1" or "true" is set; absent, "", "0"
// or "false" is not.
func queryBool(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	default:
		return false, invalidf("query parameter %s=%q: want 1 or 0", name, v)
	}
}

// parseMode reads an octal permission string such as "0644". Only the
// permission bits are accepted: setuid, setgid and sticky bits are not
// something a client needs to set through the API.
func parseMode(field, s string, def uint32) (uint32, error) {
	if s == "" {
		return def, nil
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o777 {
		return 0, invalidf("%s %q: want an octal permission from 0000 to 0777, such as 0644", field, s)
	}
	return uint32(m), nil
}
