package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"strings"
)

// A replica's identity in the election is its URL signed with the key
// every replica derives from the shared master key (secrets.Box.Signer).
// Followers forward API calls, with their credentials, to the leader's
// URL: a URL written into the leader Lease by anything else that may
// write Leases (a node's service account may, RBAC cannot tell Leases
// apart by a name it does not know in advance) would otherwise draw
// every call and key to it. A follower forwards only to a URL whose
// signature checks.

const identityContext = "airlock-leader\x00"

// signIdentity is url with its signature.
func signIdentity(key ed25519.PrivateKey, url string) string {
	sig := ed25519.Sign(key, []byte(identityContext+url))
	return url + "#" + base64.RawURLEncoding.EncodeToString(sig)
}

// identityURL checks a signed identity and returns its URL.
func identityURL(pub ed25519.PublicKey, id string) (string, bool) {
	url, sig64, ok := strings.Cut(id, "#")
	if !ok {
		return "", false
	}
	sig, err := base64.RawURLEncoding.DecodeString(sig64)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return "", false
	}
	return url, ed25519.Verify(pub, []byte(identityContext+url), sig)
}
