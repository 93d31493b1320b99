package api

import (
	"net/http"
	"strconv"

	"github.com/airlockhq/airlock/internal/version"
)

// serverInfo answers GET /v1/server: what the operator's tools on the
// host need to know of the server that answers, such as its data dir
// (airlock doctor reports on the one the server runs on), its version, and
// the agent protocol versions its running sandboxes speak (after an
// upgrade in place, some may still run an older one). Admin only: a host
// path is the operator's business, not a tenant's.
func (s *server) serverInfo(w http.ResponseWriter, r *http.Request) {
	counts, err := s.m.AgentVersions(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	agents := map[string]int{}
	for v, n := range counts {
		key := "unknown"
		if v > 0 {
			key = strconv.Itoa(v)
		}
		agents[key] += n
	}
	writeJSON(w, http.StatusOK, struct {
		DataDir       string         `json:"data_dir"`
		Version       string         `json:"version"`
		AgentProtocol int            `json:"agent_protocol"`
		Agents        map[string]int `json:"sandbox_agents"`
	}{s.dataDir, version.String(), s.agentProtocol, agents})
}
