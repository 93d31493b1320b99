// Package tmplver names one build of a template. It is a package of its
// own so that the runtime package, which the sandbox init imports for its
// types, needs no hashing: crypto/sha256 would bring the crypto packages'
// start-up into every sandbox's.
package tmplver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/airlockhq/airlock/internal/runtime"
)

// Of names one build of template t: the same on every node that holds a
// copy of it, another for the template a rebuild replaced it with.
func Of(t runtime.TemplateInfo) string {
	t.Nodes = nil
	b, _ := json.Marshal(t)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
