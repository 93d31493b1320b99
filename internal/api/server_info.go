package api

import "net/http"

// serverInfo answers GET /v1/server: what the operator's tools on the
// host need to know of the server that answers, such as its data dir
// (airlock doctor reports on the one the server runs on). Admin only: a
// host path is the operator's business, not a tenant's.
func (s *server) serverInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		DataDir string `json:"data_dir"`
	}{s.dataDir})
}
