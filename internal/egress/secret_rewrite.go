package egress

import (
	"net/http"
	"strings"
)

// Kinds of secret events; connection events have no kind.
const (
	KindSecretInjected    = "secret.injected"
	KindSecretMisdirected = "secret.misdirected"
)

// targetRules is what a secret set does to requests for one target.
// Every binding's placeholder is searched for, in binding order (pattern i
// is binding i: placeholders are unique and never empty): a bound one is
// replaced by its value, any other is kept and counted as misdirected.
type targetRules struct {
	set         *secretSet
	bound       []bool
	headers     *patterns
	body        *patterns
	bodyInjects bool // the body patterns change lengths
}

func (set *secretSet) forTarget(t target) *targetRules {
	tr := &targetRules{set: set, headers: newPatterns(nil, nil), body: newPatterns(nil, nil)}
	if set == nil {
		return tr
	}
	var ph, hv, bv [][]byte
	for i := range set.bindings {
		b := &set.bindings[i]
		p := []byte(b.Placeholder)
		bound := b.boundTo(t)
		tr.bound = append(tr.bound, bound)
		ph = append(ph, p)
		hv = append(hv, p)
		bv = append(bv, p)
		if bound {
			hv[i] = b.Value
		}
		if bound && b.Body {
			bv[i] = b.Value
			tr.bodyInjects = true
		}
	}
	tr.headers, tr.body = newPatterns(ph, hv), newPatterns(ph, bv)
	return tr
}

// requestUse records which bindings a request used or misdirected.
type requestUse struct {
	tr     *targetRules
	header []int  // placeholder matches in headers, per binding
	added  []bool // header injected, per binding
	body   *replacer
}

// rewriteRequest puts the bound values into req's headers and, as it is
// read, its body. The body is scanned even when no binding injects into
// it, to see misdirected placeholders; its length then stays the same.
func (tr *targetRules) rewriteRequest(req *http.Request) *requestUse {
	n := len(tr.bound)
	u := &requestUse{tr: tr, header: make([]int, n), added: make([]bool, n)}
	if n == 0 {
		return u
	}
	for _, vs := range req.Header {
		for i, v := range vs {
			vs[i] = tr.headers.replaceString(v, u.header)
		}
	}
	for i := range tr.set.bindings {
		b := &tr.set.bindings[i]
		if tr.bound[i] && b.Header != "" && len(req.Header.Values(b.Header)) == 0 {
			format := b.Format
			if format == "" {
				format = "{value}"
			}
			req.Header.Set(b.Header, strings.ReplaceAll(format, "{value}", string(b.Value)))
			u.added[i] = true
		}
	}
	if req.Body != nil && req.Body != http.NoBody {
		u.body = newReplacer(req.Body, tr.body)
		req.Body = u.body
		if tr.bodyInjects {
			// The value and the placeholder differ in length: the body
			// goes up chunked.
			req.ContentLength, req.TransferEncoding = -1, nil
		}
	}
	return u
}

// events returns the secret events of a request once its body was sent:
// names and places only, never a value.
func (u *requestUse) events(ev Event) []Event {
	var out []Event
	for i := range u.tr.bound {
		b := &u.tr.set.bindings[i]
		inBody := u.body != nil && u.body.counts[i] > 0
		var where []string
		if u.header[i] > 0 {
			where = append(where, "headers")
		}
		if inBody && (b.Body || !u.tr.bound[i]) {
			where = append(where, "body")
		}
		e := ev
		e.Secret, e.Status, e.BytesUp, e.BytesDown, e.DurationMS = b.Name, 0, 0, 0, 0
		switch {
		case u.tr.bound[i] && (len(where) > 0 || u.added[i]):
			var did []string
			if len(where) > 0 {
				did = append(did, "replaced in "+strings.Join(where, " and "))
			}
			if u.added[i] {
				did = append(did, "added header "+http.CanonicalHeaderKey(b.Header))
			}
			e.Kind, e.Decision, e.Reason = KindSecretInjected, Allowed, strings.Join(did, ", ")
		case !u.tr.bound[i] && len(where) > 0:
			e.Kind, e.Decision, e.Reason = KindSecretMisdirected, Denied, "not a bound host: placeholder left in "+strings.Join(where, " and ")
		default:
			continue
		}
		out = append(out, e)
	}
	return out
}

// scrubResponse replaces every bound value in resp's headers and body with
// its placeholder, so a host that echoes what it got (a debug endpoint, an
// error message quoting the Authorization header) cannot hand the sandbox
// the value. Trailers are dropped rather than scrubbed after the fact.
func (set *secretSet) scrubResponse(resp *http.Response, req *http.Request) {
	resp.Trailer = nil
	if set == nil {
		return
	}
	for _, vs := range resp.Header {
		for i, v := range vs {
			vs[i] = set.scrub.replaceString(v, nil)
		}
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return // HEAD, 1xx, 204, 304
	}
	resp.Body = newReplacer(resp.Body, set.scrub)
	resp.ContentLength = -1
	if req.ProtoAtLeast(1, 1) {
		resp.TransferEncoding = []string{"chunked"}
	} else {
		resp.TransferEncoding, resp.Close = nil, true // ends with the connection
	}
}

// scrubString removes bound values from text bound for the sandbox or the
// log, such as an upstream's error quoting a malformed header.
func (set *secretSet) scrubString(s string) string {
	if set == nil {
		return s
	}
	return set.scrub.replaceString(s, nil)
}

// flagCleartext logs every binding whose placeholder a plain-HTTP request
// carries in its headers or URL. Nothing is ever injected over cleartext:
// anyone on the path would read the value.
func (s *Sandbox) flagCleartext(req *http.Request, t target, ev Event) {
	set := s.secrets.Load()
	if set == nil {
		return
	}
	uri := req.URL.String()
	for i := range set.bindings {
		b := &set.bindings[i]
		if !strings.Contains(uri, b.Placeholder) && !headersContain(req.Header, b.Placeholder) {
			continue
		}
		e := ev
		e.Kind, e.Secret, e.Decision, e.Reason = KindSecretMisdirected, b.Name, Denied, "not a bound host"
		if b.namesHost(t) {
			e.Reason = "plain http"
		}
		s.event(e)
	}
}

func headersContain(h http.Header, sub string) bool {
	for _, vs := range h {
		for _, v := range vs {
			if strings.Contains(v, sub) {
				return true
			}
		}
	}
	return false
}
