package e2b

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/airlockhq/airlock/client"
)

// Pause, resume and connect. An Airlock pause freezes the sandbox's
// processes (the cgroup freezer): memory and processes are kept, which is
// E2B's default pause (memory: true). E2B's other kind, memory: false,
// keeps only the files and reboots on resume; Airlock has no reboot, so
// it is refused, never served as the other kind.

// lifecycleRequest is the body of E2B's pause, resume and connect
// (SandboxPauseRequest, ResumedSandbox, ConnectSandbox[V2]).
type lifecycleRequest struct {
	Timeout   *int64 `json:"timeout"`
	Memory    *bool  `json:"memory"`
	AutoPause *bool  `json:"autoPause"` // resume only, deprecated
}

var errNoMemory = errors.New("memory: false (a pause that keeps only the files, resumed by rebooting) is not supported by Airlock: a paused sandbox keeps its memory and processes")

func readLifecycle(r *http.Request) (lifecycleRequest, error) {
	var b lifecycleRequest
	err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&b)
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		return b, fmt.Errorf("bad request body: %v", err)
	}
	if b.Timeout != nil && *b.Timeout < 0 {
		return b, fmt.Errorf("timeout must be a number of seconds, got %d", *b.Timeout)
	}
	if b.AutoPause != nil && *b.AutoPause {
		return b, errAutoPause
	}
	return b, nil
}

// pauseSandbox is E2B's pause: 204, or 409 when the sandbox is already
// paused (Airlock's own pause of a paused sandbox changes nothing).
func (h *Handler) pauseSandbox(w http.ResponseWriter, r *http.Request) {
	b, err := readLifecycle(r)
	if err == nil && b.Memory != nil && !*b.Memory {
		err = errNoMemory
	}
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	c := h.clientOf(apiKey(r))
	sb, ok := h.getKnown(w, r, c)
	if !ok {
		return
	}
	if sb.State == client.StatePaused {
		writeAPIError(w, http.StatusConflict, fmt.Sprintf("sandbox %q is already paused", sb.ID))
		return
	}
	if _, err := c.PauseSandbox(r.Context(), sb.ID); err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// resumeSandbox is E2B's deprecated resume: 201 with the sandbox, 409
// when it is running. A timeout sets its life from now; without one it
// keeps what was left of it when paused (E2B's default would be 15 s).
func (h *Handler) resumeSandbox(w http.ResponseWriter, r *http.Request) {
	b, err := readLifecycle(r)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	c := h.clientOf(apiKey(r))
	sb, ok := h.getKnown(w, r, c)
	if !ok {
		return
	}
	if sb.State != client.StatePaused {
		writeAPIError(w, http.StatusConflict, fmt.Sprintf("sandbox %q is already running", sb.ID))
		return
	}
	if b.Memory != nil && !*b.Memory {
		writeAPIError(w, http.StatusBadRequest, errNoMemory.Error())
		return
	}
	if sb, err = c.ResumeSandbox(r.Context(), sb.ID); err == nil && b.Timeout != nil && *b.Timeout > 0 {
		sb, err = c.SetTimeout(r.Context(), sb.ID, time.Duration(*b.Timeout)*time.Second)
	}
	if err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	h.answerWithToken(w, r, c, sb, http.StatusCreated)
}

// connectSandbox hands a second client the sandbox's coordinates and a
// fresh access token (Airlock keeps only tokens' hashes), resuming it
// first if it is paused (201; 200 when it was running). A timeout given
// extends the sandbox's life, never shortens it, as E2B's does; v2's
// defaults to 300 seconds, as E2B's.
func (h *Handler) connectSandbox(w http.ResponseWriter, r *http.Request) {
	b, err := readLifecycle(r)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	timeout := int64(0)
	if b.Timeout != nil {
		timeout = *b.Timeout
	} else if r.Pattern == connectV2 {
		timeout = 300
	}
	c := h.clientOf(apiKey(r))
	sb, ok := h.getKnown(w, r, c)
	if !ok {
		return
	}
	status := http.StatusOK
	if sb.State == client.StatePaused {
		if b.Memory != nil && !*b.Memory {
			writeAPIError(w, http.StatusBadRequest, errNoMemory.Error())
			return
		}
		if sb, err = c.ResumeSandbox(r.Context(), sb.ID); err != nil {
			writeAPIError(w, statusOf(err), err.Error())
			return
		}
		status = http.StatusCreated
	}
	if timeout > 0 {
		if err := extend(r.Context(), c, sb, time.Duration(timeout)*time.Second); err != nil {
			writeAPIError(w, statusOf(err), err.Error())
			return
		}
	}
	h.answerWithToken(w, r, c, sb, status)
}

const connectV2 = "POST /v2/sandboxes/{id}/connect"

// answerWithToken answers E2B's Sandbox with a fresh access token.
func (h *Handler) answerWithToken(w http.ResponseWriter, r *http.Request, c *client.Client, sb client.Sandbox, status int) {
	tok, err := c.CreateToken(r.Context(), sb.ID, tokenTTL)
	if err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	writeJSON(w, status, h.briefOf(sb, tok.Token))
}
