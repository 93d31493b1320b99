package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/codeinterp"
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
		// Who reaches the sandbox's ports: hostports.go.
		AllowPublicTraffic *bool   `json:"allowPublicTraffic"`
		MaskRequestHost    *string `json:"maskRequestHost"`
	} `json:"network"`
	AutoPause    *bool             `json:"autoPause"`
	AutoResume   *autoResumeBody   `json:"autoResume"`
	MCP          json.RawMessage   `json:"mcp"`
	VolumeMounts []volumeMountBody `json:"volumeMounts"`
	IAM          json.RawMessage   `json:"iam"`
}

// createRequest maps E2B's body onto Airlock's, or says what is refused.
func (b createBody) createRequest() (client.CreateRequest, error) {
	// A template is Airlock's own (base, or one built with airlock
	// template build); the server answers 404 for one it lacks.
	req := client.CreateRequest{Template: b.TemplateID}
	if req.Template == "" {
		req.Template = "base"
	}
	if req.Template == "code-interpreter-v1" {
		// The Code Interpreter SDKs' default: Airlock's built-in
		// template (codeinterp.BuildHint builds it).
		req.Template = codeinterp.Template
	}
	if b.Timeout != nil {
		if *b.Timeout <= 0 {
			return req, fmt.Errorf("timeout must be positive, got %d", *b.Timeout)
		}
		req.Timeout = time.Duration(*b.Timeout) * time.Second
	}
	req.Metadata, req.Env = b.Metadata, b.EnvVars
	for name, v := range map[string]json.RawMessage{"mcp": b.MCP, "iam": b.IAM} {
		if isSet(v) {
			return req, fmt.Errorf("%s is not supported by Airlock", name)
		}
	}
	vols, err := volumeMounts(b.VolumeMounts)
	if err != nil {
		return req, err
	}
	req.Volumes = vols
	// E2B's autoPause pauses a sandbox when its timeout is reached instead
	// of killing it. Airlock destroys a sandbox at its timeout, always:
	// its idle_action "pause" pauses after a stretch without use, which
	// is another rule (a busy sandbox would never pause, an idle one
	// would pause long before its timeout), so it is not offered in its
	// place. autoPauseMemory only qualifies autoPause.
	if b.AutoPause != nil && *b.AutoPause {
		return req, errAutoPause
	}
	// autoResume {enabled: true} is Airlock's auto_resume: any call that
	// needs the sandbox running (a command, a file) resumes it first.
	if b.AutoResume != nil && b.AutoResume.Enabled {
		req.AutoResume = true
	}
	net, err := b.networkPolicy()
	req.Network = net
	return req, err
}

// internetAllow is E2B's internet as an Airlock allow-list: every public
// address, by IP or by a name whose addresses are all public (the proxy
// checks what it resolves before it dials); loopback, private and
// metadata addresses stay closed, as for any tenant rule.
var internetAllow = []string{"0.0.0.0/0", "::/0"}

// networkPolicy maps E2B's network options onto an Airlock egress policy
// (nil: none, Airlock's default). allowOut entries are Airlock's allow
// entries, and then the only destinations: Airlock has allow-lists only,
// so a list of exceptions to E2B's open internet becomes the whole list.
// allow_internet_access: true without allowOut is E2B's open internet
// (the Python SDK sends it on every create), denyOut taken from it;
// false, or nothing asked, keeps Airlock's default of no network (deny
// entries alone would open nothing).
func (b createBody) networkPolicy() (*client.NetworkPolicy, error) {
	var allow, deny []string
	if n := b.Network; n != nil {
		if isSet(n.EgressProxy) || isSet(n.Rules) {
			return nil, fmt.Errorf("network.egressProxy and network.rules are not supported by Airlock")
		}
		allow, deny = n.AllowOut, n.DenyOut
	}
	if len(allow) == 0 && b.AllowInternetAccess != nil && *b.AllowInternetAccess {
		allow = internetAllow
	}
	if len(allow) == 0 {
		return nil, nil
	}
	return &client.NetworkPolicy{Mode: client.NetworkAllowlist, Allow: allow, Deny: deny}, nil
}

// autoResumeBody is E2B's SandboxAutoResumeConfig.
type autoResumeBody struct {
	Enabled bool `json:"enabled"`
}

var errAutoPause = errors.New("autoPause (lifecycle.onTimeout \"pause\") is not supported by Airlock: a sandbox is destroyed when its timeout is reached; pause it with Sandbox.pause() before then, or extend it with setTimeout")

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
	TrafficAccessToken  string            `json:"trafficAccessToken,omitempty"`
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
	Lifecycle           *lifecycleBody    `json:"lifecycle,omitempty"`
	VolumeMounts        []volumeMountBody `json:"volumeMounts,omitempty"`
}

type networkBody struct {
	AllowOut           []string `json:"allowOut,omitempty"`
	DenyOut            []string `json:"denyOut,omitempty"`
	AllowPublicTraffic *bool    `json:"allowPublicTraffic,omitempty"`
}

// lifecycleBody is E2B's SandboxLifecycle. onTimeout is always "kill":
// an Airlock sandbox is destroyed at its timeout (see errAutoPause).
type lifecycleBody struct {
	AutoResume bool   `json:"autoResume"`
	OnTimeout  string `json:"onTimeout"`
}

// brief is what create and connect answer. A sandbox made from a
// snapshot shows the snapshot as its template, as E2B's do (there a
// snapshot is a template): the name it was created with.
func brief(sb client.Sandbox, token string) sandboxBody {
	tmpl := sb.Template
	if sb.Snapshot != "" {
		tmpl = sb.Snapshot
	}
	return sandboxBody{TemplateID: tmpl, Alias: tmpl, SandboxID: sb.ID, ClientID: clientID,
		EnvdVersion: EnvdVersion, EnvdAccessToken: token}
}

// detail is what get and list answer.
func detail(sb client.Sandbox) sandboxBody {
	b := brief(sb, "")
	b.StartedAt = sb.CreatedAt.UTC().Format(time.RFC3339Nano)
	b.EndAt = sb.ExpiresAt.UTC().Format(time.RFC3339Nano)
	b.State = stateOf(sb)
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
	b.Lifecycle = &lifecycleBody{AutoResume: sb.AutoResume, OnTimeout: "kill"}
	b.VolumeMounts = mountsOf(sb.Volumes)
	trafficDetail(&b, sb)
	return b
}

// known reports whether E2B would still show the sandbox: it knows
// running and paused ones; a stopped one is gone.
func known(sb client.Sandbox) bool {
	return running(sb) || sb.State == client.StatePaused
}

// running reports whether the sandbox runs (or is about to).
func running(sb client.Sandbox) bool {
	return sb.State == client.StateRunning || sb.State == client.StateCreating
}

// stateOf is E2B's state of a known sandbox: "running" or "paused".
func stateOf(sb client.Sandbox) string {
	if sb.State == client.StatePaused {
		return "paused"
	}
	return "running"
}

func (h *Handler) createSandbox(w http.ResponseWriter, r *http.Request) {
	c := h.clientOf(apiKey(r))
	req, err := readCreate(r)
	if err != nil {
		// E2B checks the key first: a wrong key is 401 whatever the body.
		if kerr := checkKey(r.Context(), c); kerr != nil {
			writeAPIError(w, statusOf(kerr), kerr.Error())
			return
		}
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	sb, err := createFrom(r.Context(), c, req)
	if err != nil {
		status := statusOf(err)
		if _, ok := err.(errNotFound); ok {
			status = http.StatusNotFound
		}
		writeAPIError(w, status, err.Error())
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
	writeJSON(w, http.StatusCreated, h.briefOf(sb, tok.Token))
}

// readCreate reads E2B's create body and maps it onto Airlock's.
func readCreate(r *http.Request) (client.CreateRequest, error) {
	var body createBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil && err != io.EOF {
		return client.CreateRequest{}, fmt.Errorf("bad request body: %w", err)
	}
	req, err := body.createRequest()
	if err == nil {
		req.Metadata, err = body.withTraffic(req.Metadata)
	}
	return req, err
}

// checkKey reports a key the API refuses (401, or 403 for a sandbox
// token), asking it something any key may read; any other failure is
// not the key's, and nil.
func checkKey(ctx context.Context, c *client.Client) error {
	_, err := c.Templates(ctx)
	if errors.Is(err, client.ErrUnauthenticated) || errors.Is(err, client.ErrForbidden) {
		return err
	}
	return nil
}

// createFrom creates the sandbox. E2B's templateID names a template or a
// snapshot (E2B's snapshots are templates; Sandbox.create(snapshotId)
// starts from one): the template is tried first, so a snapshot named
// like a template is reached through Airlock's own API only. A 404 with
// the template there is about something else (a volume), and is passed
// on as the API gave it.
func createFrom(ctx context.Context, c *client.Client, req client.CreateRequest) (client.Sandbox, error) {
	sb, err := c.CreateSandbox(ctx, req)
	if err == nil || statusOf(err) != http.StatusNotFound {
		return sb, err
	}
	if _, terr := c.Template(ctx, req.Template); terr == nil {
		return sb, err
	}
	if _, serr := c.GetSnapshot(ctx, req.Template); serr != nil {
		// E2B's own words for a missing template.
		return sb, errNotFound{fmt.Sprintf("template '%s' not found (build it with airlock template build or Template.build, or name one of your snapshots)", req.Template)}
	}
	req.Snapshot, req.Template = req.Template, ""
	return c.CreateSandbox(ctx, req)
}

// getKnown fetches a sandbox E2B would show, or answers 404.
func (h *Handler) getKnown(w http.ResponseWriter, r *http.Request, c *client.Client) (client.Sandbox, bool) {
	id := r.PathValue("id")
	sb, err := c.GetSandbox(r.Context(), id)
	if err == nil && !known(sb) {
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
	if sb, ok := h.getKnown(w, r, h.clientOf(apiKey(r))); ok {
		writeJSON(w, http.StatusOK, detail(sb))
	}
}

// deleteSandbox kills a running or paused sandbox; one already gone is
// 404 for E2B (Airlock's own DELETE is idempotent).
func (h *Handler) deleteSandbox(w http.ResponseWriter, r *http.Request) {
	c := h.clientOf(apiKey(r))
	sb, ok := h.getKnown(w, r, c)
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

// setTimeout sets a running sandbox's timeout; a paused one answers the
// API's 409 (its clock is stopped: resume it first).
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
	sb, err := c.GetSandbox(r.Context(), r.PathValue("id"))
	if err == nil {
		err = extend(r.Context(), c, sb, time.Duration(b.Duration)*time.Second)
	}
	if err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// extend makes sandbox sb live at least d from now; a later expiry stays.
func extend(ctx context.Context, c *client.Client, sb client.Sandbox, d time.Duration) error {
	if time.Until(sb.ExpiresAt) >= d {
		return nil
	}
	_, err := c.SetTimeout(ctx, sb.ID, d)
	return err
}
