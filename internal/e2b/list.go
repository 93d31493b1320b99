package e2b

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

// listSandboxes answers E2B's list: an array, the next page's token in
// X-Next-Token. E2B lists running and paused sandboxes (both unless
// state= picks); Airlock's list takes one state, so the facade lists the
// states in turn, and its token says which state and where in it
// ("paused/sb-123"). The template and startedAfter filters are applied
// here, page by page, so a page may come out short.
func (h *Handler) listSandboxes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			writeAPIError(w, http.StatusBadRequest, "limit must be a positive number")
			return
		}
		limit = min(n, 1000)
	}
	var after time.Time
	if sa := q.Get("startedAfter"); sa != "" {
		t, err := time.Parse(time.RFC3339Nano, sa)
		if err != nil {
			writeAPIError(w, http.StatusBadRequest, fmt.Sprintf("startedAfter %q is not an RFC 3339 time", sa))
			return
		}
		after = t
	}
	states, err := parseStates(q["state"])
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	i, cursor, err := parseListToken(q.Get("nextToken"), states)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	md, err := parseMetadataQuery(q.Get("metadata"))
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	c := h.clientOf(apiKey(r))
	out := []sandboxBody{}
	fetched, next := 0, ""
	for ; i < len(states) && next == ""; i++ {
		page, err := c.ListSandboxes(r.Context(), client.ListOptions{State: states[i], Metadata: md, Limit: limit - fetched, After: cursor})
		if err != nil {
			writeAPIError(w, statusOf(err), err.Error())
			return
		}
		fetched += len(page.Sandboxes)
		for _, sb := range page.Sandboxes {
			b := detail(sb)
			if tmpl := q.Get("template"); sb.CreatedAt.After(after) && (tmpl == "" || tmpl == b.TemplateID || tmpl == sb.Template) {
				out = append(out, b)
			}
		}
		cursor = ""
		switch {
		case page.Next != "":
			next = states[i] + "/" + page.Next
		case fetched >= limit && i+1 < len(states):
			next = states[i+1] + "/"
		}
	}
	if next != "" {
		w.Header().Set("X-Next-Token", next)
	}
	writeJSON(w, http.StatusOK, out)
}

// parseStates reads E2B's state filter (repeated, or comma-separated)
// as Airlock states in the order they are listed: running, then paused.
func parseStates(vals []string) ([]string, error) {
	want := map[string]bool{}
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			switch s = strings.TrimSpace(s); s {
			case "running", "paused":
				want[s] = true
			case "":
			default:
				return nil, fmt.Errorf("state %q: want running or paused", s)
			}
		}
	}
	var out []string
	for _, s := range []string{client.StateRunning, client.StatePaused} {
		if len(want) == 0 || want[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

// parseListToken reads a nextToken the facade made: the index of the
// state to go on with, and the API's cursor in it.
func parseListToken(tok string, states []string) (int, string, error) {
	if tok == "" {
		return 0, "", nil
	}
	state, cursor, ok := strings.Cut(tok, "/")
	i := slices.Index(states, state)
	if !ok || i < 0 {
		return 0, "", fmt.Errorf("nextToken %q is not one this listing gave", tok)
	}
	return i, cursor, nil
}

// parseMetadataQuery reads E2B's metadata filter: one query parameter
// holding "k=v&k2=v2", whose keys and values the SDK escaped once more.
func parseMetadataQuery(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	vals, err := url.ParseQuery(s)
	if err != nil {
		return nil, fmt.Errorf("bad metadata filter %q: %v", s, err)
	}
	md := map[string]string{}
	for k, vs := range vals {
		key, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(vs[len(vs)-1])
		if err1 != nil || err2 != nil || key == "" {
			return nil, fmt.Errorf("bad metadata filter %q", s)
		}
		md[key] = val
	}
	return md, nil
}
