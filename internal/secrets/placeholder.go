package secrets

import (
	"crypto/rand"
	"encoding/hex"
)

// PlaceholderPrefix starts every placeholder, so a log reader (and the
// egress proxy, scanning a request) can tell one from data.
const PlaceholderPrefix = "airlock-ph-"

// PlaceholderLen is a placeholder's length in bytes.
const PlaceholderLen = len(PlaceholderPrefix) + 40

// NewPlaceholder returns a fresh placeholder: PlaceholderPrefix and 40
// lowercase hex characters (160 random bits). The entropy makes it unique
// per sandbox and secret, and keeps it from colliding with real data that
// the proxy would otherwise rewrite.
func NewPlaceholder() string {
	var b [20]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return PlaceholderPrefix + hex.EncodeToString(b[:])
}
