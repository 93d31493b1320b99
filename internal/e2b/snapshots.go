package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

// Snapshots and forks. An E2B snapshot is a template made from a
// sandbox (memory and all); an Airlock snapshot is the sandbox's files
// (its writable layer), named per tenant, and a sandbox made from it
// starts fresh on those files. So Sandbox.create(snapshotId) gets the
// files, not the processes; an Airlock fork likewise. The snapshot's
// E2B id and its one name are the Airlock name.

// snapshotInfo is E2B's SnapshotInfo.
type snapshotInfo struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

func infoOf(s client.Snapshot) snapshotInfo {
	return snapshotInfo{SnapshotID: s.Name, Names: []string{s.Name}}
}

// createSnapshot is E2B's POST /sandboxes/{id}/snapshots {name}. A name
// that exists is 409: E2B would make it name the new snapshot, but
// Airlock never drops a snapshot on its own; delete it first.
func (h *Handler) createSnapshot(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&b); err != nil && err != io.EOF {
		writeAPIError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	c := h.clientOf(apiKey(r))
	sb, ok := h.getKnown(w, r, c)
	if !ok {
		return
	}
	snap, err := c.CreateSnapshot(r.Context(), sb.ID, b.Name)
	if err != nil {
		msg := err.Error()
		if statusOf(err) == http.StatusConflict && b.Name != "" {
			if _, gerr := c.GetSnapshot(r.Context(), b.Name); gerr == nil {
				msg = fmt.Sprintf("snapshot %q exists: delete it first (Sandbox.deleteSnapshot); Airlock does not rebind a name to a new snapshot", b.Name)
			}
		}
		writeAPIError(w, statusOf(err), msg)
		return
	}
	writeJSON(w, http.StatusCreated, infoOf(snap))
}

// listSnapshots is E2B's GET /snapshots, filtered by sandboxID and name,
// in pages by name (nextToken: the last name of the page before).
func (h *Handler) listSnapshots(w http.ResponseWriter, r *http.Request) {
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
	all, err := h.clientOf(apiKey(r)).ListSnapshots(r.Context())
	if err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	slices.SortFunc(all, func(a, b client.Snapshot) int { return strings.Compare(a.Name, b.Name) })
	out := []snapshotInfo{}
	sandbox, name, after := q.Get("sandboxID"), q.Get("name"), q.Get("nextToken")
	for _, s := range all {
		if s.Name <= after || sandbox != "" && s.Sandbox != sandbox || name != "" && s.Name != name {
			continue
		}
		if len(out) == limit {
			w.Header().Set("X-Next-Token", out[limit-1].SnapshotID)
			break
		}
		out = append(out, infoOf(s))
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteTemplate is E2B's DELETE /templates/{id}, which is how its SDK
// deletes a snapshot (a snapshot is a template there). Only snapshots
// are deleted here: Airlock's templates are the operator's.
func (h *Handler) deleteTemplate(w http.ResponseWriter, r *http.Request) {
	c := h.clientOf(apiKey(r))
	name := r.PathValue("id")
	err := c.DeleteSnapshot(r.Context(), name)
	if err == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if statusOf(err) == http.StatusNotFound {
		if _, terr := c.Template(r.Context(), name); terr == nil {
			writeAPIError(w, http.StatusNotImplemented, fmt.Sprintf("%q is an Airlock template: the E2B facade deletes snapshots only (templates: airlock template)", name))
			return
		}
		writeAPIError(w, http.StatusNotFound, fmt.Sprintf("snapshot '%s' not found", name))
		return
	}
	writeAPIError(w, statusOf(err), err.Error())
}

// forkResult is E2B's SandboxForkResult: a sandbox or an error.
type forkResult struct {
	Sandbox *sandboxBody `json:"sandbox,omitempty"`
	Error   *apiError    `json:"error,omitempty"`
}

// forkSandbox is E2B's POST /sandboxes/{id}/fork {count, timeout}. The
// forks have the sandbox's files, not its processes and memory (E2B's
// carry those too); all are made or none, so a failure is the call's
// error. Without a timeout a fork gets Airlock's default (E2B's: 15 s).
func (h *Handler) forkSandbox(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Count   *int   `json:"count"`
		Timeout *int64 `json:"timeout"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&b); err != nil && err != io.EOF {
		writeAPIError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	req := client.ForkRequest{Count: 1}
	if b.Count != nil {
		req.Count = *b.Count
	}
	if b.Timeout != nil {
		if *b.Timeout <= 0 {
			writeAPIError(w, http.StatusBadRequest, fmt.Sprintf("timeout must be positive, got %d", *b.Timeout))
			return
		}
		req.Timeout = time.Duration(*b.Timeout) * time.Second
	}
	c := h.clientOf(apiKey(r))
	sb, ok := h.getKnown(w, r, c)
	if !ok {
		return
	}
	forks, err := c.ForkSandbox(r.Context(), sb.ID, req)
	if err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	out := make([]forkResult, len(forks))
	for i, f := range forks {
		out[i] = h.forkResultOf(r.Context(), c, f)
	}
	writeJSON(w, http.StatusCreated, out)
}

// forkResultOf mints a fork's access token; a fork that cannot have one
// is of no use, so it is removed and reported as that fork's error.
func (h *Handler) forkResultOf(ctx context.Context, c *client.Client, f client.Sandbox) forkResult {
	tok, err := c.CreateToken(ctx, f.ID, tokenTTL)
	if err != nil {
		if derr := c.DeleteSandbox(context.WithoutCancel(ctx), f.ID); derr != nil {
			slog.Warn("e2b: removing a fork whose token could not be minted", "sandbox", f.ID, "err", derr)
		}
		return forkResult{Error: &apiError{Code: statusOf(err), Message: "minting the fork's access token: " + err.Error()}}
	}
	body := h.briefOf(f, tok.Token)
	return forkResult{Sandbox: &body}
}
