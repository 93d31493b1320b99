package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/client"
)

// HTTPOptions configures the streamable HTTP endpoint.
type HTTPOptions struct {
	// APIURL is the REST API the tools call, e.g. the daemon's own loopback
	// address; HTTPClient carries those calls (nil: http.DefaultClient).
	APIURL     string
	HTTPClient *http.Client
	// StateKey signs the requestState a 2026-07-28 call hands its client
	// when it asks the user (an approval), so that the retry is trusted
	// only as this server issued it. Give every replica the same key (a
	// retry may reach another one); nil takes a key of this process's
	// own, and a retry that reaches another process is refused.
	StateKey []byte
}

// sessionTimeout ends an MCP session no request has used for this long
// (its sandboxes and their shell sessions live on, by their own timeouts).
const sessionTimeout = time.Hour

// tokenKey is where the verified API key travels in auth.TokenInfo.Extra.
const tokenKey = "airlock_key"

// NewHTTPHandler serves MCP over streamable HTTP, every protocol revision
// go-sdk speaks, on one path. Each request must carry an API key as a
// bearer token; the key is checked against the API before anything else,
// so an unknown key never gets a session (401). The SDK's DNS-rebinding
// protection stays on: a browser page that rebinds its name to 127.0.0.1
// must not reach a local daemon.
//
// Two of the SDK's handlers share the one server (byRevision):
//   - up to 2025-11-25 a client initializes a session (Mcp-Session-Id),
//     bound to the key that opened it (the SDK refuses the session id with
//     another key: a leaked session id is not a credential) and held in
//     this process's memory until it is closed or idle for an hour;
//   - from 2026-07-28 (SEP-2575) there is no session: every request
//     carries its version and capabilities in _meta and is served by a
//     session that lives as long as the request, so any replica, or the
//     next leader after a failover, serves the next call. The SDK serves
//     that revision only from a stateless handler.
func NewHTTPHandler(opts HTTPOptions) http.Handler {
	hc := opts.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	clientOf := func(key string) *client.Client { return client.New(opts.APIURL, key, client.WithHTTPClient(hc)) }
	srv := newServer(func(extra *mcpsdk.RequestExtra) (*client.Client, error) {
		if extra == nil || extra.TokenInfo == nil {
			return nil, errors.New("no API key on this request")
		}
		key, _ := extra.TokenInfo.Extra[tokenKey].(string)
		if key == "" {
			return nil, errors.New("no API key on this request")
		}
		return clientOf(key), nil
	}, opts.StateKey)
	verify := func(ctx context.Context, key string, _ *http.Request) (*auth.TokenInfo, error) {
		// The cheapest call every API key may make; a sandbox token is
		// refused (403): MCP tools list and create sandboxes.
		_, err := clientOf(key).ListSandboxes(ctx, client.ListOptions{Limit: 1})
		switch {
		case errors.Is(err, client.ErrUnauthenticated), errors.Is(err, client.ErrForbidden):
			return nil, fmt.Errorf("%w: an Airlock API key (alk_...) is required", auth.ErrInvalidToken)
		case err != nil:
			return nil, fmt.Errorf("checking the API key: %w", err)
		}
		sum := sha256.Sum256([]byte(key))
		return &auth.TokenInfo{UserID: hex.EncodeToString(sum[:]), Extra: map[string]any{tokenKey: key}}, nil
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(byRevision(srv))
}

// byRevision serves srv with the SDK's session handler to clients up to
// 2025-11-25 and with its stateless one from 2026-07-28.
func byRevision(srv *mcpsdk.Server) http.Handler {
	getServer := func(*http.Request) *mcpsdk.Server { return srv }
	// A harness that goes away without closing its session leaves it idle:
	// close it after a while, or they pile up in memory.
	sessions := mcpsdk.NewStreamableHTTPHandler(getServer, &mcpsdk.StreamableHTTPOptions{SessionTimeout: sessionTimeout})
	// A 2026-07-28 call is its POST: the client cancels it by dropping the
	// request, which must cancel the handler (and so kill the command).
	stateless := mcpsdk.NewStreamableHTTPHandler(getServer, &mcpsdk.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if modernRequest(r) {
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
}

// firstStateless is the first revision without sessions (SEP-2575).
const firstStateless = "2026-07-28"

// modernRequest reports whether r is a 2026-07-28-or-later request: such a
// client sends Mcp-Protocol-Version on every POST, its server/discover
// probe included (SEP-2243). Revisions are dates, so they compare as
// strings. Without the header a request is a legacy one (an initialize,
// say); a modern one that left it out is refused by the session handler
// with the versions it serves, and the client falls back to initialize.
func modernRequest(r *http.Request) bool {
	return r.Header.Get("Mcp-Protocol-Version") >= firstStateless
}
