// Package api serves Airlock's REST API under /v1 (docs/API.md): routing,
// authentication of API keys and sandbox tokens, JSON decoding, the mapping
// of domain errors to HTTP status codes, exec output as server-sent events,
// and the OpenAPI document. It owns no policy: ownership, quotas and limits
// are the sandbox layer's, which it reaches through the interfaces of
// manager.go. It must never compare a credential as a string (a lookup by
// its SHA-256 only, so response time says nothing about how much of a guess
// was right), never log or echo a credential, and never let a sandbox
// token reach anything but its own sandbox.
package api
