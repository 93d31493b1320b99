package secrets

import (
	"crypto/hmac"
	"crypto/sha256"
)

// Derive returns a 32-byte key for purpose, derived from the master key
// (through the audit signing seed, itself an HMAC of the master key): the
// same on every daemon that shares the master key, never stored, and
// another for each purpose, so that no use of one can be turned into
// another's.
func (b *Box) Derive(purpose string) []byte {
	m := hmac.New(sha256.New, b.signing.Seed())
	m.Write([]byte("airlock derived key v1\x00" + purpose))
	return m.Sum(nil)
}
