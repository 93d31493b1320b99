package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
)

// KeySize is the master key's length: AES-256.
const KeySize = 32

// Box encrypts values at rest with AES-256-GCM under a master key. It is
// safe for concurrent use.
type Box struct {
	aead    cipher.AEAD
	signing ed25519.PrivateKey // derived from the master key; see Signer
}

// NewBox returns a Box for a KeySize-byte key.
func NewBox(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("master key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	// A random 96-bit nonce per Seal: a counter would have to survive
	// restarts and never repeat across daemons sharing a key, and 2^32
	// seals under one key (NIST's bound for random nonces) is far beyond
	// any tenant's secret rotations.
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	// A second key for signatures, derived so that it needs no file of
	// its own and is the same on every daemon that shares the master key.
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("airlock audit signing key v1"))
	return &Box{aead: aead, signing: ed25519.NewKeyFromSeed(mac.Sum(nil))}, nil
}

// Signer returns the Ed25519 key that signs audit exports: derived from
// the master key, never stored.
func (b *Box) Signer() ed25519.PrivateKey { return b.signing }

// Seal encrypts value with a fresh random nonce and returns nonce ||
// ciphertext+tag. ad (additional data) binds the ciphertext to its row:
// callers pass tenantID+"\x00"+name, so a ciphertext copied to another
// tenant's or secret's row (by someone with write access to the database)
// does not open there.
func (b *Box) Seal(value, ad []byte) []byte {
	return b.aead.Seal(nil, nil, value, ad)
}

// Open decrypts what Seal returned for the same ad. Its result is the
// plaintext: only the egress proxy's injection path (and the task runner,
// for a task's own env) may call it.
func (b *Box) Open(sealed, ad []byte) ([]byte, error) {
	v, err := b.aead.Open(nil, nil, sealed, ad)
	if err != nil {
		// Wrong key, wrong row or a changed byte: GCM cannot tell which.
		return nil, fmt.Errorf("open secret: %w", err)
	}
	return v, nil
}

// String keeps a Box printed by mistake from dumping its key schedule.
func (b *Box) String() string { return "secrets.Box" }

// GoString is String for %#v.
func (b *Box) GoString() string { return b.String() }

// AD is the additional data that binds a sealed value to its row.
func AD(tenantID, name string) []byte {
	return []byte(tenantID + "\x00" + name)
}
