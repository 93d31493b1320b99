package e2b

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/airlockhq/airlock/client"
)

// Volumes. An E2B volume is an Airlock volume of the caller's tenant; its
// E2B id is its Airlock name, as for snapshots. E2B's create takes only a
// name, so the facade gives every volume it makes defaultVolumeMB (a
// volume of another size is made with Airlock's own API or CLI, and used
// here by name). E2B also reads and writes a volume's files without a
// sandbox (/volumecontent); Airlock has no such route, a volume's files
// being reached only through a sandbox that mounts it, so those calls
// answer 501 saying so, and the token a volume is handed out with is
// empty: there is nothing it could open, and the SDK sends it to
// E2B_VOLUME_API_URL, or else to api.E2B_DOMAIN, which a real credential
// must never reach.

// defaultVolumeMB is the size of a volume made through the facade.
const defaultVolumeMB = 1024

// volumeBody is E2B's Volume (list) and VolumeAndToken (create, get).
type volumeBody struct {
	VolumeID string  `json:"volumeID"`
	Name     string  `json:"name"`
	Token    *string `json:"token,omitempty"`
}

func volumeOf(v client.Volume) volumeBody {
	none := ""
	return volumeBody{VolumeID: v.Name, Name: v.Name, Token: &none}
}

// volumeMountBody is E2B's SandboxVolumeMount: every mount it asks for is
// read-write (it has no read-only one).
type volumeMountBody struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// volumeMounts maps E2B's mounts onto Airlock's; the API checks the rest
// (the volume exists, the path is allowed, one read-write mount at a
// time).
func volumeMounts(in []volumeMountBody) ([]client.VolumeMount, error) {
	var out []client.VolumeMount
	for i, m := range in {
		if m.Name == "" || m.Path == "" {
			return nil, fmt.Errorf("volumeMounts[%d]: a mount needs a volume name and a path", i)
		}
		out = append(out, client.VolumeMount{Name: m.Name, Path: m.Path})
	}
	return out, nil
}

// mountsOf is a sandbox's mounts as E2B shows them: the read-only ones
// too, which only Airlock's own API makes.
func mountsOf(vs []client.VolumeMount) []volumeMountBody {
	out := []volumeMountBody{}
	for _, v := range vs {
		out = append(out, volumeMountBody{Name: v.Name, Path: v.Path})
	}
	return out
}

// createVolume is E2B's POST /volumes {name}: 201, 409 for a name in use.
func (h *Handler) createVolume(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&b); err != nil && err != io.EOF {
		writeAPIError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return
	}
	if b.Name == "" {
		writeAPIError(w, http.StatusBadRequest, "a volume needs a name")
		return
	}
	v, err := h.clientOf(apiKey(r)).CreateVolume(r.Context(), b.Name, defaultVolumeMB, "")
	if err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, volumeOf(v))
}

// listVolumes is E2B's GET /volumes: every volume of the tenant.
func (h *Handler) listVolumes(w http.ResponseWriter, r *http.Request) {
	vs, err := h.clientOf(apiKey(r)).ListVolumes(r.Context())
	if err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	out := []volumeBody{}
	for _, v := range vs {
		b := volumeOf(v)
		b.Token = nil
		out = append(out, b)
	}
	writeJSON(w, http.StatusOK, out)
}

// getVolume is E2B's GET /volumes/{volumeID}, from the tenant's list (the
// client has no call for one volume).
func (h *Handler) getVolume(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("volumeID")
	vs, err := h.clientOf(apiKey(r)).ListVolumes(r.Context())
	if err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	for _, v := range vs {
		if v.Name == id {
			writeJSON(w, http.StatusOK, volumeOf(v))
			return
		}
	}
	writeAPIError(w, http.StatusNotFound, fmt.Sprintf("volume '%s' not found", id))
}

// deleteVolume is E2B's DELETE /volumes/{volumeID}: 204, 404 (the SDK's
// destroy() returns false), 409 while a sandbox mounts it.
func (h *Handler) deleteVolume(w http.ResponseWriter, r *http.Request) {
	if err := h.clientOf(apiKey(r)).DeleteVolume(r.Context(), r.PathValue("volumeID")); err != nil {
		writeAPIError(w, statusOf(err), err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// volumeContent answers E2B's volume content API, which Airlock lacks.
// 501 rather than 404: the SDK turns a 404 into "path not found", which
// would be a lie.
func (h *Handler) volumeContent(w http.ResponseWriter, r *http.Request) {
	writeAPIError(w, http.StatusNotImplemented, fmt.Sprintf("reading or writing volume %q without a sandbox is not supported by Airlock: "+
		"mount it in a sandbox (Sandbox.create({volumeMounts: {'/mnt/data': volume}})) and use sandbox.files there", r.PathValue("volumeID")))
}
