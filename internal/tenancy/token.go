package tenancy

import (
	"context"
	"time"
)

// MintToken makes a token for the sandbox sandboxID of tenantID that
// expires after ttl (to the second), and returns its plaintext, which is
// never stored, with its record.
func (s *Service) MintToken(ctx context.Context, sandboxID, tenantID string, ttl time.Duration) (string, Token, error) {
	plain, hash := NewToken()
	t := Token{
		ID: newID("tok_"), SandboxID: sandboxID, TenantID: tenantID, Hash: hash,
		ExpiresAt: s.now().Add(ttl).UTC().Truncate(time.Second),
	}
	if err := s.st.CreateToken(ctx, t); err != nil {
		return "", Token{}, err
	}
	return plain, t, nil
}
