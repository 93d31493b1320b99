// Package sbinit is the sandbox init: the program that runs as PID 1 of
// each sandbox (it finishes the namespaces, builds the root filesystem,
// drops every privilege it can and serves the agent), and the spawner that
// forks the inits for the daemon. It is its own program
// (cmd/airlock-init), embedded in the airlock binary and executed from a
// sealed memfd, so what it imports is what every sandbox pays for at
// start: the agent, landlock, seccomp and x/sys/unix, and nothing of the
// daemon (no HTTP, store, telemetry or API). TestInitDeps holds its
// import list to deps.txt. It must never trust the host's paths once it
// has pivoted, nor let anything it hands a sandboxed process keep a
// privilege.
package sbinit

// UsrLocal is where a built template's layer goes in a sandbox.
const UsrLocal = "/usr/local"

// LayerUsrLocal is a built template's layer, under its build directory.
const LayerUsrLocal = "layer/usr-local"

// Where a build sandbox's writable /usr/local lives in its directory.
const (
	BuildUpper = "build-upper"
	BuildWork  = "build-work"
)
