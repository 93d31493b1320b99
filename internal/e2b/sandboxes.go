package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

// tokenTTL is how long an envdAccessToken lasts: the longest a sandbox
// token may (a sandbox can be given more time than that only by setting
// its timeout again, and then a connect mints a fresh token).
const tokenTTL = 24 * time.Hour

// clientID fills E2B's clientID, which names the host a sandbox runs on.
const clientID = "airlock"

// createBody is E2B's NewSandbox. Fields Airlock cannot honour are refused
// when set, never dropped silently; others (secure, allowPublicTraffic...)
// change nothing here: every sandbox has an access token and no public
// ports.
type createBody struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"`
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Network             *struct {
		AllowOut    []string        `json:"allowOut"`
		DenyOut     []string        `json:"denyOut"`
		EgressProxy json.RawMessage `json:"egressProxy"`
		Rules       json.RawMessage `json:"rules"`
	} `json:"network"`
	AutoPause    *bool           `json:"autoPause"`
	AutoResume   json.RawMessage `json:"autoResume"`
	MCP          json.RawMessage `json:"mcp"`
	VolumeMounts json.RawMessage `json:"volumeMounts"`
	IAM          json.RawMessage `json:"iam"`
}

// createRequest maps E2B's body onto Airlock's, or says what is refused.
func (b createBody) createRequest() (client.CreateRequest, error) {
	// A template is Airlock's own (base, or one built with airlock
	// template build); the server answers 404 for one it lacks.
	req := client.CreateRequest{Template: b.TemplateID}
	if req.Template == "" {
		req.Template = "base"
	}
	if b.Timeout != nil {
		if *b.Timeout <= 0 {
			return req, fmt.Errorf("timeout must be positive, got %d", *b.Timeout)
		}
		req.Timeout = time.Duration(*b.Timeout) * time.Second
	}
	req.Metadata, req.Env = b.Metadata, b.EnvVars
	for name, v := range map[string]json.RawMessage{"mcp": b.MCP, "volumeMounts": b.VolumeMounts, "iam": b.IAM, "autoResume": b.AutoResume} {
		if isSet(v) {
			return req, fmt.Errorf("%s is not supported by Airlock", name)
		}
	}
	if b.AutoPause != nil && *b.AutoPause {
		return req, fmt.Errorf("autoPause is not supported by Airlock: sandboxes are destroyed at their timeout")
	}
	var allow, deny []string
	if n := b.Network; n != nil {
		if isSet(n.EgressProxy) || isSet(n.Rules) {
			return req, fmt.Errorf("network.egressProxy and network.rules are not supported by Airlock")
		}
		allow, deny = n.AllowOut, n.DenyOut
	}
	// allowOut entries are Airlock's allow entries: a wide one ("0.0.0.0/0",
	// "::/0") is accepted as on the native API, matches destinations given
	// as public IP addresses (not names) and never opens loopback, private
	// or metadata addresses; entries naming only those are refused by the
	// API with the entry and why.
	if len(allow) == 0 && b.AllowInternetAccess != nil && *b.AllowInternetAccess {
		return req, fmt.Errorf("allow_internet_access is not supported by Airlock: sandboxes have no network unless network.allowOut lists where they may go")
	}
	// Without allowOut (allow_internet_access false, or nothing asked) the
	// sandbox keeps Airlock's default: no network at all. Deny entries
	// alone would open nothing.
	if len(allow) > 0 {
		req.Network = &client.NetworkPolicy{Mode: client.NetworkAllowlist, Allow: allow, Deny: deny}
	}
	return req, nil
}

func isSet(m json.RawMessage) bool {
	s := strings.TrimSpace(string(m))
	return s != "" && s != "null" && s != "{}" && s != "[]" && s != "false"
}

type errNotFound struct{ msg string }

func (e errNotFound) Error() string { return e.msg }

// sandboxBody is E2B's Sandbox (create, connect) and SandboxDetail (get).
type sandboxBody struct {
	TemplateID          string            `json:"templateID"`
	Alias               string            `json:"alias,omitempty"`
	SandboxID           string            `json:"sandboxID"`
	ClientID            string            `json:"clientID"`
	EnvdVersion         string            `json:"envdVersion"`
	EnvdAccessToken     string            `json:"envdAccessToken,omitempty"`
	Domain              *string           `json:"domain"`
	StartedAt           string            `json:"startedAt,omitempty"`
	EndAt               string            `json:"endAt,omitempty"`
	State               string            `json:"state,omitempty"`
	CPUCount            *int              `json:"cpuCount,omitempty"`
	MemoryMB            *int64            `json:"memoryMB,omitempty"`
	DiskSizeMB          *int64            `json:"diskSizeMB,omitempty"`
	Metadata            map[string]string `json:"metadata,omitempty"`
	AllowInternetAccess *bool             `json:"allowInternetAccess,omitempty"`
	Network             *networkBody      `json:"network,omitempty"`
}

type networkBody struct {
	AllowOut []string `json:"allowOut,omitempty"`
	DenyOut  []string `json:"denyOut,omitempty"`
}

// brief is what create and connect answer.
func brief(sb client.Sandbox, token string) sandboxBody {
	return sandboxBody{TemplateID: sb.Template, Alias: sb.Template, SandboxID: sb.ID, ClientID: clientID,
		EnvdVersion: EnvdVersion, EnvdAccessToken: token}
}

// detail is what get and list answer.
func detail(sb client.Sandbox) sandboxBody {
	b := brief(sb, "")
	b.StartedAt = sb.CreatedAt.UTC().Format(time.RFC3339Nano)
	b.EndAt = sb.ExpiresAt.UTC().Format(time.RFC3339Nano)
	b.State = "running"
	cpus := int(sb.Limits.CPUs + 0.999)
	b.CPUCount, b.MemoryMB, b.DiskSizeMB = &cpus, &sb.Limits.MemoryMB, &sb.Limits.DiskMB
	b.Metadata = sb.Metadata
	if b.Metadata == nil {
		b.Metadata = map[string]string{}
	}
	// "Internet access" is as much as Airlock gives: an allow-list.
	open := sb.Network != nil && sb.Network.Mode == client.NetworkAllowlist
	b.AllowInternetAccess = &open
	if open {
		b.Network = &networkBody{AllowOut: sb.Network.Allow, DenyOut: sb.Network.Deny}
	}
	return b
}

// live reports whether E2B would still show the sandbox: it knows only
// running (and paused) ones; a stopped one is gone.
func live(sb client.Sandbox) bool {
	return sb.State == client.StateRunning || sb.State == client.StateCreating
}

func (h *Handler) createSandbox(w http.ResponseWriter, r *http.Request) {
	var body createBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil && err != io.EOF {
		writeAPIError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	req, err := body.createRequest()
	if err != nil {
		status := http.StatusBadRequest
		if _, ok := err.(errNotFound); ok {
			status = http.StatusNotFound
		}
		writeAPIError(w, status, err.Error())
		return
	}
	c := h.clientOf(apiKey(r))
	sb, err := c.CreateSandbox(r.Context(), req)
	if err != nil {
		msg := err.Error()
		if statusOf(err) == http.StatusNotFound {
			// The one thing a create can miss: E2B's own words for it.
			msg = fmt.Sprintf("template '%s' not found (build it with airlock template build)", req.Template)
		}
		writeAPIError(w, statusOf(err), msg)
		return
	}
	tok, err := c.CreateToken(r.Context(), sb.ID, tokenTTL)
	if err != nil {
		// A sandbox the caller cannot reach is of no use: do not leave it.
		if derr := c.DeleteSandbox(context.WithoutCancel(r.Context()), sb.ID); derr != nil {
			slog.Warn("e2b: removing a sandbox whose token could not be minted", "sandbox", sb.ID, "err", derr)
		}
		writeAPIError(w, statusOf(err), "minting the sandbox's access token: "+err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, brief(sb, tok.Token))
}

// getLive fetches a sandbox E2B would show, or answers 404.
func (h *Handler) getLive(w http.ResponseWriter, r *http.Request, c *client.Client) (client.Sandbox, bool) {
	id := r.PathValue("id")
	sb, err := c.GetSandbox(r.Context(), id)
	if err == nil && !live(sb) {
		writeAPIError(w, http.StatusNotFound, fmt.Sprintf("sandbox %q is %s", id, sb.State))
		return sb, false
	}
	if err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return sb, false
	}
	return sb, true
}

func (h *Handler) getSandbox(w http.ResponseWriter, r *http.Request) {
	if sb, ok := h.getLive(w, r, h.clientOf(apiKey(r))); ok {
		writeJSON(w, http.StatusOK, detail(sb))
	}
}

// deleteSandbox kills a running sandbox; one already gone is 404 for E2B
// (Airlock's own DELETE is idempotent).
func (h *Handler) deleteSandbox(w http.ResponseWriter, r *http.Request) {
	c := h.clientOf(apiKey(r))
	sb, ok := h.getLive(w, r, c)
	if !ok {
		return
	}
	id := sb.ID
	if err := c.DeleteSandbox(r.Context(), id); err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	h.ptys.forget(id)
	w.WriteHeader(http.StatusNoContent)
}

// timeoutBody is E2B's timeout and refresh bodies (seconds).
type timeoutBody struct {
	Timeout  int64 `json:"timeout"`
	Duration int64 `json:"duration"`
}

func readTimeout(r *http.Request) (timeoutBody, error) {
	var b timeoutBody
	err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&b)
	if err == io.EOF {
		err = nil
	}
	return b, err
}

func (h *Handler) setTimeout(w http.ResponseWriter, r *http.Request) {
	b, err := readTimeout(r)
	if err != nil || b.Timeout <= 0 {
		writeAPIError(w, http.StatusBadRequest, "timeout must be a positive number of seconds")
		return
	}
	if _, err := h.clientOf(apiKey(r)).SetTimeout(r.Context(), r.PathValue("id"), time.Duration(b.Timeout)*time.Second); err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// refresh extends the sandbox's life to at least duration seconds from now
// (E2B's default: 60).
func (h *Handler) refresh(w http.ResponseWriter, r *http.Request) {
	b, err := readTimeout(r)
	if err != nil || b.Duration < 0 {
		writeAPIError(w, http.StatusBadRequest, "duration must be a number of seconds")
		return
	}
	if b.Duration == 0 {
		b.Duration = 60
	}
	c := h.clientOf(apiKey(r))
	if err := extend(r.Context(), c, r.PathValue("id"), time.Duration(b.Duration)*time.Second); err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// extend makes the sandbox live at least d from now; a later expiry stays.
func extend(ctx context.Context, c *client.Client, id string, d time.Duration) error {
	sb, err := c.GetSandbox(ctx, id)
	if err != nil {
		return err
	}
	if time.Until(sb.ExpiresAt) >= d {
		return nil
	}
	_, err = c.SetTimeout(ctx, id, d)
	return err
}

// connectSandbox hands a second client the sandbox's coordinates and a
// fresh access token (Airlock keeps only tokens' hashes). A timeout given
// extends the sandbox's life, never shortens it, as E2B's does.
func (h *Handler) connectSandbox(w http.ResponseWriter, r *http.Request) {
	b, err := readTimeout(r)
	if err != nil || b.Timeout < 0 {
		writeAPIError(w, http.StatusBadRequest, "timeout must be a number of seconds")
		return
	}
	c := h.clientOf(apiKey(r))
	sb, ok := h.getLive(w, r, c)
	if !ok {
		return
	}
	if b.Timeout > 0 {
		if err := extend(r.Context(), c, sb.ID, time.Duration(b.Timeout)*time.Second); err != nil {
			writeAPIError(w, statusOf(err), err.Error())
			return
		}
	}
	tok, err := c.CreateToken(r.Context(), sb.ID, tokenTTL)
	if err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, brief(sb, tok.Token))
}

// listSandboxes answers E2B's list: an array, the next page's token in
// X-Next-Token. Only running sandboxes exist for E2B (Airlock has no
// paused ones).
func (h *Handler) listSandboxes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	opts := client.ListOptions{State: client.StateRunning, After: q.Get("nextToken")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			writeAPIError(w, http.StatusBadRequest, "limit must be a positive number")
			return
		}
		opts.Limit = min(n, 1000)
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
	if st := q.Get("state"); st != "" && !containsRunning(st) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("[]\n"))
		return
	}
	md, err := parseMetadataQuery(q.Get("metadata"))
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	opts.Metadata = md
	page, err := h.clientOf(apiKey(r)).ListSandboxes(r.Context(), opts)
	if err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	out := make([]sandboxBody, 0, len(page.Sandboxes))
	for _, sb := range page.Sandboxes {
		// Filtered here, page by page: a page may come out short.
		if tmpl := q.Get("template"); sb.CreatedAt.After(after) && (tmpl == "" || tmpl == sb.Template) {
			out = append(out, detail(sb))
		}
	}
	if page.Next != "" {
		w.Header().Set("X-Next-Token", page.Next)
	}
	writeJSON(w, http.StatusOK, out)
}

// containsRunning reads E2B's state filter ("running,paused", or repeated).
func containsRunning(states string) bool {
	for _, s := range strings.Split(states, ",") {
		if strings.TrimSpace(s) == "running" {
			return true
		}
	}
	return false
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
