package clienttest

import "github.com/airlockhq/airlock/client"

// sandboxJSON is a sandbox as the server sends it: every field the API
// document requires is there, empty or not, where client.Sandbox leaves
// an empty one out (a client reading the fake must meet what it meets on
// the server: network {"mode":"none"}, not no network at all).
type sandboxJSON struct {
	client.Sandbox
	Metadata     map[string]string    `json:"metadata"`
	Workdir      string               `json:"workdir"`
	Network      networkJSON          `json:"network"`
	IdleTimeoutS int64                `json:"idle_timeout_s"`
	AutoResume   bool                 `json:"auto_resume"`
	IdleAction   string               `json:"idle_action"`
	MaxPausedS   int64                `json:"max_paused_s"`
	Volumes      []client.VolumeMount `json:"volumes"`
}

type networkJSON struct {
	Mode  string   `json:"mode"`
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

func wire(sb client.Sandbox) sandboxJSON {
	out := sandboxJSON{Sandbox: sb, Metadata: sb.Metadata, Workdir: sb.Workdir,
		Network:      networkJSON{Mode: "none", Allow: []string{}, Deny: []string{}},
		IdleTimeoutS: sb.IdleTimeoutS, AutoResume: sb.AutoResume, IdleAction: sb.IdleAction,
		MaxPausedS: sb.MaxPausedS, Volumes: sb.Volumes}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	if p := sb.Network; p != nil {
		out.Network.Mode = p.Mode
		out.Network.Allow = append(out.Network.Allow, p.Allow...)
		out.Network.Deny = append(out.Network.Deny, p.Deny...)
	}
	if out.Volumes == nil {
		out.Volumes = []client.VolumeMount{}
	}
	return out
}

func wireAll(sbs []client.Sandbox) []sandboxJSON {
	out := make([]sandboxJSON, 0, len(sbs))
	for _, sb := range sbs {
		out = append(out, wire(sb))
	}
	return out
}

// keyJSON is a key in a listing, as the server lists it.
type keyJSON struct {
	client.Key
	Admin bool `json:"admin"`
}
