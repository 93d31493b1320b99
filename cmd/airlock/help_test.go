package main

import (
	"slices"
	"strings"
	"testing"
)

// helpVerbs is every verb and sub-verb whose help a person can ask for.
var helpVerbs = [][]string{
	{"serve"}, {"run"}, {"doctor"}, {"bench"}, {"bench", "spawn"}, {"bench", "api"}, {"bench", "egress"},
	{"create"}, {"exec"}, {"shell"}, {"attach"}, {"ls"}, {"rm"}, {"cp"}, {"timeout"},
	{"tenants"}, {"tenants", "create"}, {"tenants", "ls"}, {"tenants", "set"},
	{"keys"}, {"keys", "create"}, {"keys", "ls"}, {"keys", "rm"},
	{"secrets"}, {"secrets", "set"}, {"secrets", "ls"}, {"secrets", "rm"},
	{"audit"}, {"audit", "verify"}, {"audit", "export"}, {"audit", "key"},
	{"approvals"}, {"approvals", "ls"}, {"approvals", "allow"}, {"approvals", "deny"},
	{"replay"}, {"events"}, {"webhooks"}, {"webhooks", "add"}, {"webhooks", "ls"}, {"webhooks", "rm"}, {"webhooks", "deliveries"},
	{"metrics"}, {"usage"}, {"task"}, {"task", "run"}, {"task", "ls"}, {"task", "get"}, {"task", "cancel"},
	{"template"}, {"template", "build"}, {"template", "ls"}, {"template", "rm"}, {"mcp"}, {"teardown"}, {"version"},
	{"node"}, {"node", "drain"}, {"nodes"}, {"nodes", "token"}, {"nodes", "ls"}, {"nodes", "drain"}, {"nodes", "undrain"}, {"nodes", "rm"},
	{"pause"}, {"resume"}, {"fork"}, {"snapshot"}, {"snapshot", "create"}, {"snapshot", "ls"}, {"snapshot", "rm"},
	{"volume"}, {"volume", "create"}, {"volume", "ls"}, {"volume", "rm"}, {"template", "import"}, {"bench", "lifecycle"}, {"bench", "tasks"}, {"task", "harnesses"},
}

// TestEveryHelpExitsZeroOnStdout: --help, -h and help VERB print the
// verb's usage to stdout and exit 0, for every verb; help asked for is
// not an error. The verbs with a data dir show --data-dir, not its old
// name.
func TestEveryHelpExitsZeroOnStdout(t *testing.T) {
	for name := range commands {
		if !slices.ContainsFunc(helpVerbs, func(v []string) bool { return v[0] == name }) {
			t.Errorf("verb %s is missing from helpVerbs", name)
		}
	}
	env := []string{"AIRLOCK_URL=http://127.0.0.1:1", "AIRLOCK_API_KEY="}
	for _, v := range helpVerbs {
		for _, args := range [][]string{append(v, "--help"), append(v, "-h"), append([]string{"help"}, v...)} {
			out, errs, code := runCLI(t, env, nil, args...)
			if code != 0 || errs != "" || !strings.HasPrefix(out, "Usage") {
				t.Errorf("airlock %s: exit %d, stderr %q, stdout %.80q; want 0, nothing on stderr, the usage on stdout",
					strings.Join(args, " "), code, errs, out)
			}
			if strings.Contains(out, "state-dir") {
				t.Errorf("airlock %s shows the old name --state-dir:\n%s", strings.Join(args, " "), out)
			}
		}
	}
	for _, v := range []string{"serve", "run", "doctor", "mcp", "teardown"} {
		if out, _, _ := runCLI(t, env, nil, v, "--help"); !strings.Contains(out, "-data-dir") {
			t.Errorf("airlock %s --help does not show --data-dir:\n%s", v, out)
		}
	}
	if out, errs, code := runCLI(t, env, nil, "help"); code != 0 || errs != "" || !strings.Contains(out, "Usage:") {
		t.Errorf("airlock help: exit %d, stderr %q", code, errs)
	}
}
