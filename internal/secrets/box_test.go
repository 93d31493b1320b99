package secrets

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func testBox(t *testing.T) *Box {
	t.Helper()
	b, err := NewBox(bytes.Repeat([]byte{7}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBoxRoundTrip(t *testing.T) {
	b := testBox(t)
	for _, v := range []string{"x", "sk-live-0123456789", strings.Repeat("\xff", MaxValueBytes)} {
		ad := AD("ten_1", "KEY")
		sealed := b.Seal([]byte(v), ad)
		// A value of a few bytes turns up in random ciphertext by chance;
		// only longer ones say anything.
		if len(v) >= 8 && bytes.Contains(sealed, []byte(v)) {
			t.Errorf("sealed %q holds the plaintext", v[:1])
		}
		got, err := b.Open(sealed, ad)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, []byte(v)) {
			t.Errorf("Open(Seal(%d bytes)) = %d bytes, differ", len(v), len(got))
		}
	}
	// A fresh nonce each time: sealing one value twice gives two ciphertexts,
	// so equal values do not show as equal rows.
	if a, c := b.Seal([]byte("v"), nil), b.Seal([]byte("v"), nil); bytes.Equal(a, c) {
		t.Error("two seals of one value are equal")
	}
}

func TestBoxRefuses(t *testing.T) {
	b := testBox(t)
	ad := AD("ten_1", "KEY")
	sealed := b.Seal([]byte("secret value"), ad)
	other, err := NewBox(bytes.Repeat([]byte{8}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		box    *Box
		sealed []byte
		ad     []byte
	}{
		{"other tenant's row", b, sealed, AD("ten_2", "KEY")},
		{"other secret's row", b, sealed, AD("ten_1", "KEY2")},
		// The separator keeps ("ten_1", "KEY") and ("ten_1K", "EY") apart.
		{"boundary moved", b, sealed, AD("ten_1K", "EY")},
		{"no ad", b, sealed, nil},
		{"other key", other, sealed, ad},
		{"empty", b, nil, ad},
		{"truncated", b, sealed[:len(sealed)-1], ad},
		{"nonce only", b, sealed[:12], ad},
	}
	for i := range sealed {
		tampered := bytes.Clone(sealed)
		tampered[i] ^= 0x01
		tests = append(tests, struct {
			name   string
			box    *Box
			sealed []byte
			ad     []byte
		}{fmt.Sprintf("byte %d flipped", i), b, tampered, ad})
	}
	for _, tt := range tests {
		if v, err := tt.box.Open(tt.sealed, tt.ad); err == nil {
			t.Errorf("%s: opened to %d bytes", tt.name, len(v))
		}
	}
}

func TestNewBoxKeySize(t *testing.T) {
	for _, n := range []int{0, 16, 24, 31, 33, 64} {
		if _, err := NewBox(make([]byte, n)); err == nil {
			t.Errorf("NewBox(%d bytes) succeeded", n)
		}
	}
}

func TestBoxNeverPrintsKey(t *testing.T) {
	b := testBox(t)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(verb, b); out != "secrets.Box" {
			t.Errorf("%s printed %q", verb, out)
		}
	}
}
