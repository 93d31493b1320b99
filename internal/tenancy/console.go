package tenancy

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// ConsoleSessionTTL is how long a console sign-in lasts.
const ConsoleSessionTTL = 12 * time.Hour

// Session is a live console session: whom it signs in as, and until when.
type Session struct {
	Principal Principal
	ExpiresAt time.Time
}

// CreateConsoleSession exchanges the API key key for a console session,
// and returns the session's plaintext (the cookie value, never stored).
// A key that is not one, or is unknown or deleted, is ErrBadCredential.
func (s *Service) CreateConsoleSession(ctx context.Context, key string) (string, Session, error) {
	if !strings.HasPrefix(key, KeyPrefix) {
		return "", Session{}, ErrBadCredential
	}
	k, err := s.st.KeyByHash(ctx, HashCredential(key))
	if err != nil {
		return "", Session{}, lookupError(err)
	}
	plain, hash := newCredential(SessionPrefix)
	now := s.now().UTC()
	cs := ConsoleSession{Hash: hash, KeyID: k.ID, CreatedAt: now, ExpiresAt: now.Add(ConsoleSessionTTL).Truncate(time.Second)}
	// The key may be deleted meanwhile: the store refuses, "not found".
	if err := s.st.CreateConsoleSession(ctx, cs); err != nil {
		return "", Session{}, lookupError(err)
	}
	return plain, Session{Principal: keyPrincipal(k), ExpiresAt: cs.ExpiresAt}, nil
}

// ConsoleSession returns the live session of a cookie value; one that
// is forged, signed out, expired or of a deleted key is ErrBadSession.
func (s *Service) ConsoleSession(ctx context.Context, cookie string) (Session, error) {
	if !strings.HasPrefix(cookie, SessionPrefix) {
		return Session{}, ErrBadSession
	}
	cs, k, err := s.st.ConsoleSessionByHash(ctx, HashCredential(cookie))
	if err != nil {
		if errors.Is(err, errdefs.ErrNotFound) {
			err = ErrBadSession
		}
		return Session{}, err
	}
	if !s.now().Before(cs.ExpiresAt) {
		return Session{}, ErrBadSession
	}
	return Session{Principal: keyPrincipal(k), ExpiresAt: cs.ExpiresAt}, nil
}

// DeleteConsoleSession signs out the session of a cookie value, so that
// a surviving copy of the cookie stops working.
func (s *Service) DeleteConsoleSession(ctx context.Context, cookie string) error {
	return s.st.DeleteConsoleSession(ctx, HashCredential(cookie))
}
