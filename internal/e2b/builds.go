package e2b

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/airlockhq/airlock/client"
)

// Template builds. E2B builds a template from a base image and steps run
// on it; Airlock imports an image as it is (client.ImportImage, admin
// keys only). So a build that is an image, with or without a start
// command (startCmd, readyCmd), becomes an import, and anything more
// (steps, another template as the base, registry credentials) is refused
// with 400, never dropped. E2B runs the start command once, at build
// time, and snapshots the sandbox with it running; Airlock runs it in
// each new sandbox and hands the sandbox out once it is ready. The SDK
// asks for a build (POST /v3/templates), triggers it
// (POST /v2/templates/{id}/builds/{buildID}) and polls its status; the
// facade runs the import in the background between the last two and
// keeps its state and log in memory (buildTable). A template's E2B id is
// its Airlock name.

// requestBuildBody is E2B's TemplateBuildRequestV3.
type requestBuildBody struct {
	Name          string   `json:"name"`
	Alias         string   `json:"alias"` // deprecated name
	Tags          []string `json:"tags"`
	CPUCount      *int     `json:"cpuCount"`
	MemoryMB      *int     `json:"memoryMB"`
	MinFreeDiskMB *int     `json:"minFreeDiskMb"`
}

// templateName is the Airlock template a build request names, or why it
// cannot be built.
func (b requestBuildBody) templateName() (string, error) {
	name := b.Name
	if name == "" {
		name = b.Alias
	}
	switch {
	case name == "":
		return "", errors.New("a template build needs a name")
	case strings.Contains(name, ":") || len(b.Tags) > 0:
		return "", fmt.Errorf("template tags are not supported by Airlock: a template is its name alone (build %q without a tag)", strings.SplitN(name, ":", 2)[0])
	case b.CPUCount != nil || b.MemoryMB != nil || b.MinFreeDiskMB != nil:
		return "", errors.New("cpuCount, memoryMB and minFreeDiskMb are not supported by Airlock: a template has no resources of its own (an Airlock sandbox gets its limits when it is created)")
	}
	return name, nil
}

// startBuildBody is E2B's TemplateBuildStartV2.
type startBuildBody struct {
	FromImage         string          `json:"fromImage"`
	FromTemplate      string          `json:"fromTemplate"`
	FromImageRegistry json.RawMessage `json:"fromImageRegistry"`
	Steps             []struct {
		Type string `json:"type"`
	} `json:"steps"`
	StartCmd string `json:"startCmd"`
	ReadyCmd string `json:"readyCmd"`
	Force    bool   `json:"force"` // every import pulls afresh: nothing to force
}

// importRequest is the import a build body stands for, or why it has none.
func (b startBuildBody) importRequest(name string) (client.ImportImageRequest, error) {
	switch {
	case b.FromTemplate != "":
		return client.ImportImageRequest{}, fmt.Errorf("fromTemplate is not supported by Airlock: a template is built from an image only (Template().fromImage(...))")
	case b.FromImage == "":
		return client.ImportImageRequest{}, errors.New("fromImage is required: Airlock builds a template from an image")
	case isSet(b.FromImageRegistry):
		return client.ImportImageRequest{}, errors.New("registry credentials (fromImage's credentials, fromAWSRegistry, fromGCPRegistry) are not supported by Airlock's E2B facade: " +
			"keep them as an Airlock secret bound to the registry's host and run airlock template import --credentials SECRET NAME IMAGE")
	case len(b.Steps) > 0:
		types := make([]string, len(b.Steps))
		for i, s := range b.Steps {
			types[i] = s.Type
		}
		return client.ImportImageRequest{}, fmt.Errorf("template steps (%s) are not supported by Airlock: a template is its image as it is; "+
			"build what the steps do into the image, or use airlock template build", strings.Join(types, ", "))
	case b.StartCmd == "" && b.ReadyCmd != "":
		return client.ImportImageRequest{}, errors.New("readyCmd without startCmd is not supported by Airlock: a template's ready command says when its start command is ready " +
			"(Template().setStartCmd(cmd, readyCmd))")
	}
	return client.ImportImageRequest{Name: name, Image: b.FromImage, Description: "built through the E2B API",
		Insecure: loopbackRegistry(b.FromImage), Start: b.start()}, nil
}

// waitForPort is the ready command of the SDKs' waitForPort(port).
var waitForPort = regexp.MustCompile(`^\[ -n "\$\(ss -Htuln sport = :([0-9]{1,5})\)" \]$`)

// start is the template's start command, nil for none. waitForPort's
// check becomes a ready_port, which Airlock checks itself: the SDK's
// runs ss, which slim images (python:3-slim) lack.
func (b startBuildBody) start() *client.TemplateStart {
	if b.StartCmd == "" {
		return nil
	}
	st := &client.TemplateStart{Command: b.StartCmd, ReadyCommand: b.ReadyCmd}
	if m := waitForPort.FindStringSubmatch(b.ReadyCmd); m != nil {
		if port, _ := strconv.Atoi(m[1]); port >= 1 && port <= 65535 {
			st.ReadyPort, st.ReadyCommand = port, ""
		}
	}
	return st
}

// loopbackRegistry reports whether ref's registry is on this host, which
// is pulled from over plain http as Docker does (it holds 127.0.0.0/8
// insecure by default): no network is crossed, every layer's digest is
// still checked, and the egress proxy reaches loopback only where the
// operator opened it (--egress-allow-private).
func loopbackRegistry(ref string) bool {
	first, _, ok := strings.Cut(ref, "/")
	if !ok {
		return false
	}
	host := first
	if h, _, err := net.SplitHostPort(first); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// templateAnswer is E2B's TemplateRequestResponseV3. Airlock's templates
// serve every tenant, so public is true.
type templateAnswer struct {
	TemplateID string   `json:"templateID"`
	BuildID    string   `json:"buildID"`
	Names      []string `json:"names"`
	Aliases    []string `json:"aliases"`
	Public     bool     `json:"public"`
	Tags       []string `json:"tags"`
}

// requestBuild is POST /v3/templates: a build waiting for its trigger.
// Only an admin key imports images, so any other is refused here, before
// anything is recorded. A template of the name that was not imported from
// an image (base, one built with airlock template build) is not replaced.
func (h *Handler) requestBuild(w http.ResponseWriter, r *http.Request) {
	var body requestBuildBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil && err != io.EOF {
		writeAPIError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	name, err := body.templateName()
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	key := apiKey(r)
	c := h.clientOf(key)
	if _, err := c.ServerInfo(r.Context()); err != nil {
		msg := err.Error()
		if statusOf(err) == http.StatusForbidden {
			msg = "building a template imports an image into Airlock, which takes an admin key"
		}
		writeAPIError(w, statusOf(err), msg)
		return
	}
	if t, err := c.Template(r.Context(), name); err == nil && t.From != "image" {
		writeAPIError(w, http.StatusConflict, fmt.Sprintf("template %q exists and was not imported from an image: the E2B facade replaces only image templates", name))
		return
	} else if err != nil && statusOf(err) != http.StatusNotFound {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	b, err := h.builds.add(name, key)
	if err != nil {
		w.Header().Set("Retry-After", "10")
		writeAPIError(w, http.StatusTooManyRequests, err.Error())
		return
	}
	writeJSON(w, http.StatusAccepted, templateAnswer{TemplateID: name, BuildID: b.id, Names: []string{name},
		Aliases: []string{name}, Public: true, Tags: []string{}})
}

// uploadLink is GET /templates/{id}/files/{hash}, which the SDK asks only
// for COPY steps: refused, as every step is.
func (h *Handler) uploadLink(w http.ResponseWriter, r *http.Request) {
	writeAPIError(w, http.StatusBadRequest, "template steps (COPY) are not supported by Airlock: a template is its image as it is; "+
		"build the files into the image, or use airlock template build")
}

// startBuild is POST /v2/templates/{id}/builds/{buildID}: 202, the import
// running in the background. A build it refuses is ended with the reason.
func (h *Handler) startBuild(w http.ResponseWriter, r *http.Request) {
	key := apiKey(r)
	b, ok := h.builds.get(r.PathValue("id"), r.PathValue("buildID"), key)
	if !ok {
		writeAPIError(w, http.StatusNotFound, fmt.Sprintf("build %s of template %s not found", r.PathValue("buildID"), r.PathValue("id")))
		return
	}
	var body startBuildBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil && err != io.EOF {
		writeAPIError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	req, err := body.importRequest(b.template)
	if err != nil {
		if h.builds.refuse(b, err) {
			writeAPIError(w, http.StatusBadRequest, err.Error())
		} else {
			writeAPIError(w, http.StatusConflict, fmt.Sprintf("build %s: %v", b.id, errStarted))
		}
		return
	}
	switch err := h.builds.start(b, h.clientOf(key), req); err {
	case nil:
		w.WriteHeader(http.StatusAccepted)
	case errBusy:
		// The SDK retries a 429 after Retry-After, the build still waiting.
		w.Header().Set("Retry-After", "10")
		writeAPIError(w, http.StatusTooManyRequests, err.Error())
	default:
		writeAPIError(w, http.StatusConflict, fmt.Sprintf("build %s: %v", b.id, err))
	}
}

// buildStatus is GET /templates/{id}/builds/{buildID}/status?logsOffset=N:
// E2B's TemplateBuildInfo with the log entries from the N-th on.
func (h *Handler) buildStatus(w http.ResponseWriter, r *http.Request) {
	b, ok := h.builds.get(r.PathValue("id"), r.PathValue("buildID"), apiKey(r))
	if !ok {
		writeAPIError(w, http.StatusNotFound, fmt.Sprintf("build %s of template %s not found", r.PathValue("buildID"), r.PathValue("id")))
		return
	}
	offset := 0
	if s := r.URL.Query().Get("logsOffset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			writeAPIError(w, http.StatusBadRequest, "logsOffset must be a number of entries")
			return
		}
		offset = n
	}
	writeJSON(w, http.StatusOK, h.builds.info(b, offset))
}

// templateAlias is GET /templates/aliases/{alias} (Template.exists): 200
// for a template the server has, 404 otherwise.
func (h *Handler) templateAlias(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("alias")
	if _, err := h.clientOf(apiKey(r)).Template(r.Context(), name); err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct {
		TemplateID string `json:"templateID"`
		Public     bool   `json:"public"`
	}{name, true})
}

// newBuildID is a build's id: random, in a UUID's shape as E2B's are.
func newBuildID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
