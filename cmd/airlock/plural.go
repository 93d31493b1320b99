package main

import (
	"fmt"
	"strings"
)

// plural writes a count with its noun: "1 artifact", "2 artifacts",
// "0 artifacts", "2 sandboxes".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	for _, end := range []string{"s", "x", "ch", "sh"} {
		if strings.HasSuffix(noun, end) {
			return fmt.Sprintf("%d %ses", n, noun)
		}
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
