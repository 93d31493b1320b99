// Package skipper is gotest's subject: a test that passes, one the host
// cannot run, and one that skips for a tool it lacks.
package skipper

import (
	"testing"

	"github.com/airlockhq/airlock/internal/testenv"
)

func TestPasses(t *testing.T) {}

func TestHostLacks(t *testing.T) { testenv.Unsupported(t, "no frobnicator in this kernel") }

func TestToolMissing(t *testing.T) { t.Skip("frobctl is not installed") }
