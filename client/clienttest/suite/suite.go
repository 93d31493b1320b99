// Package suite is the Go client's tests written once for any server:
// client/client_test.go runs them against the fake (clienttest), and
// internal/api's TestClientSuite against the fake and a real in-process
// server on the Linux runtime, every answer of both checked against
// openapi.json. A test that passes on one and fails on the other is a
// divergence of the fake (or of the server from what the fake promises).
//
// The tests assert what a user of the client sees, in terms both servers
// can give: the names they make are unique in the process (the real
// server's store outlives a test), lists are searched rather than
// counted, and commands are sh scripts whose effect the fake's Shell
// gives without running anything.
package suite

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/airlockhq/airlock/client"
)

// Server is a running server the suite calls.
type Server struct {
	URL      string
	AdminKey string // a key with admin rights
}

// Client is an admin client of s.
func (s Server) Client() *client.Client { return client.New(s.URL, s.AdminKey) }

// Run runs the suite's tests as subtests of t, each against a server that
// start gives it (one per test, or one shared: the tests make their own
// sandboxes, tenants and keys).
func Run(t *testing.T, start func(t *testing.T) Server) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Server)
	}{
		{"SandboxLifecycle", testSandboxLifecycle},
		{"Exec", testExec},
		{"Files", testFiles},
		{"TokenReachesOneSandbox", testTokenReachesOneSandbox},
		{"TenantsAndKeys", testTenantsAndKeys},
		{"CreateRefusals", testCreateRefusals},
		{"PauseAndResume", testPauseAndResume},
		{"SnapshotsAndForks", testSnapshotsAndForks},
		{"Volumes", testVolumes},
		{"Templates", testTemplates},
		{"ServerInfo", testServerInfo},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, start(t)) })
	}
}

var seq atomic.Int64

// unique is prefix made unique in this process.
func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }
