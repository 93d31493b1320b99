package main

import (
	"net/http"

	"github.com/airlockhq/airlock/internal/console"
)

// withConsole serves the browser console c's pages and assets (GET and
// HEAD of its own paths) beside everything else, which keeps its answers.
func withConsole(c *console.Handler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.Match(r) {
			c.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
