package secrets

import (
	"regexp"
	"testing"
)

func TestNewPlaceholder(t *testing.T) {
	re := regexp.MustCompile(`^airlock-ph-[0-9a-f]{40}$`)
	seen := map[string]bool{}
	for range 1000 {
		p := NewPlaceholder()
		if !re.MatchString(p) || len(p) != PlaceholderLen {
			t.Fatalf("placeholder %q: want airlock-ph- and 40 lowercase hex", p)
		}
		if seen[p] {
			t.Fatalf("placeholder %q returned twice", p)
		}
		seen[p] = true
	}
}
