package main

import (
	"net/http"

	"github.com/airlockhq/airlock/internal/console"
)

// withConsole serves the browser console's pages and assets (GET and HEAD
// of its own paths) beside everything else, which keeps its answers.
func withConsole(next http.Handler) http.Handler {
	c := console.New()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.Match(r) {
			c.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
