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
}

// sessionTimeout ends an MCP session no request has used for this long
// (its sandboxes and their shell sessions live on, by their own timeouts).
const sessionTimeout = time.Hour

// tokenKey is where the verified API key travels in auth.TokenInfo.Extra.
const tokenKey = "airlock_key"

// NewHTTPHandler serves MCP over streamable HTTP. Each request must carry
// an API key as a bearer token; the key is checked against the API before
// anything else, so an unknown key never gets a session (401), and each
// session stays bound to the key that opened it (the SDK refuses the
// session id with another key: a leaked session id is not a credential).
// The SDK's DNS-rebinding protection stays on: a browser page that rebinds
// its name to 127.0.0.1 must not reach a local daemon.
func NewHTTPHandler(opts HTTPOptions) http.Handler {
	hc := opts.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	clientOf := func(key string) *client.Client { return client.New(opts.APIURL, key, client.WithHTTPClient(hc)) }
	srv := NewServer(func(extra *mcpsdk.RequestExtra) (*client.Client, error) {
		if extra == nil || extra.TokenInfo == nil {
			return nil, errors.New("no API key on this request")
		}
		key, _ := extra.TokenInfo.Extra[tokenKey].(string)
		if key == "" {
			return nil, errors.New("no API key on this request")
		}
		return clientOf(key), nil
	})
	// A harness that goes away without closing its session leaves it idle:
	// close it after a while, or they pile up in memory.
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv },
		&mcpsdk.StreamableHTTPOptions{SessionTimeout: sessionTimeout, PropagateRequestCancellation: true})
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
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}
