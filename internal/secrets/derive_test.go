package secrets

import (
	"bytes"
	"testing"
)

// TestDerive: a derived key is a function of the master key and the
// purpose alone, and no two of them, nor the signing seed, are alike.
func TestDerive(t *testing.T) {
	a, err := NewBox(bytes.Repeat([]byte{1}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := NewBox(bytes.Repeat([]byte{1}, KeySize))
	b, _ := NewBox(bytes.Repeat([]byte{2}, KeySize))
	k := a.Derive("e2b traffic")
	if len(k) != 32 || !bytes.Equal(k, a2.Derive("e2b traffic")) {
		t.Fatalf("derived key %x (%d bytes) differs between two boxes of one master key", k, len(k))
	}
	for name, other := range map[string][]byte{
		"another purpose":    a.Derive("e2b traffic2"),
		"another master key": b.Derive("e2b traffic"),
		"the signing seed":   a.Signer().Seed(),
	} {
		if bytes.Equal(k, other) {
			t.Errorf("derived key equals %s's", name)
		}
	}
}
