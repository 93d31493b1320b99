package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
)

// jsonEncoder writes JSON for a terminal or a program, never for an HTML
// page: "<", ">" and "&" as they are, not \u003c, \u003e and \u0026.
// That holds inside raw JSON the server sent on (audit data, a tool
// call's input) too, which may carry those escapes already.
func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(unescapeWriter{w})
	enc.SetEscapeHTML(false)
	return enc
}

// printJSONLines writes each of list to stdout as a line of JSON.
func printJSONLines[T any](list []T) error {
	enc := jsonEncoder(os.Stdout)
	for _, v := range list {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}

// marshalJSON is json.Marshal as jsonEncoder writes it, without the
// newline.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := jsonEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// unescapeWriter passes each write through unescapeHTML. An Encoder
// writes a value in one write, so no escape is split between two.
type unescapeWriter struct{ w io.Writer }

func (u unescapeWriter) Write(p []byte) (int, error) {
	if _, err := u.w.Write(unescapeHTML(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// unescapeHTML undoes, in JSON text, the escapes \u003c, \u003e and
// \u0026 that Go's encoder writes for HTML's sake. It reads escapes in
// pairs, so an escaped backslash followed by "u003c" (the text \u003c)
// stays as it is; the JSON means the same before and after.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			if c, ok := htmlEscapes[string(bytes.ToLower(b[i+2:i+6]))]; ok {
				out = append(out, c)
				i += 5
				continue
			}
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}

var htmlEscapes = map[string]byte{"003c": '<', "003e": '>', "0026": '&'}
