package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestJSONOutputHasNoHTMLEscapes: what the CLI prints as JSON carries
// "<", ">" and "&" as they are, also inside raw JSON the server sent
// escaped, and a literal backslash-u text is not mistaken for an escape.
func TestJSONOutputHasNoHTMLEscapes(t *testing.T) {
	raw := json.RawMessage(`{"cmd":"a \u003c b \u0026\u0026 c \u003E d","lit":"\\u003c"}`)
	var b bytes.Buffer
	if err := jsonEncoder(&b).Encode(map[string]any{"data": raw, "s": "<tag> & more"}); err != nil {
		t.Fatal(err)
	}
	want := `{"data":{"cmd":"a < b && c > d","lit":"\\u003c"},"s":"<tag> & more"}` + "\n"
	if b.String() != want {
		t.Errorf("got  %s\nwant %s", b.String(), want)
	}
}

// FuzzUnescapeHTML: for any string, unescaping Go's escaped encoding of
// it leaves JSON that decodes to the same string, without \u003c.
func FuzzUnescapeHTML(f *testing.F) {
	for _, s := range []string{"<a href=\"x\">&amp;</a>", `\u003c`, `\\u003c`, "\\", "<\\>", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc, _ := json.Marshal(s)
		got := unescapeHTML(enc)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q -> %s: not JSON: %v", s, got, err)
		}
		var want string
		json.Unmarshal(enc, &want)
		if back != want {
			t.Fatalf("%q: decodes to %q after unescaping, %q before", s, back, want)
		}
		if bytes.Contains(got, []byte(`\u003c`)) && !bytes.Contains([]byte(s), []byte(`u003c`)) {
			t.Fatalf("%q -> %s still escapes <", s, got)
		}
	})
}
