package tenancy

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// Credential prefixes: an API key of a tenant, a token of one sandbox, a
// console session's cookie value.
const (
	KeyPrefix     = "alk_"
	TokenPrefix   = "alt_"
	SessionPrefix = "als_"
)

// NewKey returns a new API key and the hash to store for it.
func NewKey() (plaintext string, hash []byte) { return newCredential(KeyPrefix) }

// NewToken returns a new sandbox token and the hash to store for it.
func NewToken() (plaintext string, hash []byte) { return newCredential(TokenPrefix) }

func newCredential(prefix string) (string, []byte) {
	s := prefix + base64.RawURLEncoding.EncodeToString(randomBytes(32))
	return s, HashCredential(s)
}

// HashCredential is the SHA-256 under which a key, token or console
// session is stored and looked up. The credentials carry 256 random bits,
// so a fast unsalted hash is enough: there is nothing to brute-force.
func HashCredential(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails: crypto/rand crashes the program instead
	return b
}

// newID returns a record id such as "ten_3f9a...".
func newID(prefix string) string { return prefix + hex.EncodeToString(randomBytes(12)) }
