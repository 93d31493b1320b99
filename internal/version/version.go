// Package version says which Airlock this binary is.
package version

import "runtime/debug"

// Version is set at link time (-ldflags "-X
// github.com/airlockhq/airlock/internal/version.Version=v1.2.3"); empty, the
// build's VCS revision stands in, else "dev".
var Version string

// String is this binary's version.
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if len(rev) >= 12 {
			return "dev-" + rev[:12] + dirty
		}
	}
	return "dev"
}
