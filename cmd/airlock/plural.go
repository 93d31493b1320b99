package main

import "fmt"

// plural writes a count with its noun: "1 artifact", "2 artifacts",
// "0 artifacts". Every noun the CLI counts takes an s.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
