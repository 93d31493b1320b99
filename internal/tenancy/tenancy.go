package tenancy

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/errdefs"
)

// Store is what tenancy needs of the store: tenants, keys, tokens and
// console sessions. sqlite.Store and postgres.Store implement it. Its
// not-found and conflict errors wrap errdefs' kinds.
type Store interface {
	CreateTenant(ctx context.Context, t Tenant) error
	GetTenant(ctx context.Context, id string) (Tenant, error)
	TenantByName(ctx context.Context, name string) (Tenant, error)
	ListTenants(ctx context.Context) ([]Tenant, error)
	UpdateTenantQuota(ctx context.Context, t Tenant) (Tenant, error)

	CreateKey(ctx context.Context, k Key) error
	KeyByHash(ctx context.Context, hash []byte) (Key, error)
	ListKeys(ctx context.Context, tenantID string) ([]Key, error)
	DeleteKey(ctx context.Context, id string) error

	CreateToken(ctx context.Context, t Token) error
	TokenByHash(ctx context.Context, hash []byte) (Token, error)

	CreateConsoleSession(ctx context.Context, cs ConsoleSession) error
	ConsoleSessionByHash(ctx context.Context, hash []byte) (ConsoleSession, Key, error)
	DeleteConsoleSession(ctx context.Context, hash []byte) error
}

// Options tunes a Service. Zero fields take defaults.
type Options struct {
	// Now is the clock for expiry and creation times (default time.Now).
	Now func() time.Time
	// NoKeyCache looks every key up in the store: for a process whose
	// keys are deleted through another one (a control-plane replica that
	// does not lead), which no deletion's cache drop reaches.
	NoKeyCache bool
}

// Service answers who a credential belongs to, and manages tenants, keys,
// tokens and console sessions.
type Service struct {
	st      Store
	now     func() time.Time
	keys    keyCache
	noCache bool
}

// New returns a Service over st.
func New(st Store, opts Options) *Service {
	s := &Service{st: st, now: opts.Now, noCache: opts.NoKeyCache}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Errors of the credential checks. Store errors other than "not found"
// come back as the store returned them.
var (
	// ErrBadCredential: a key or token that is unknown, deleted or
	// expired, or a string that is neither.
	ErrBadCredential = errors.New("unknown, deleted or expired credential")
	// ErrBadSession: a console session cookie that does not open a live
	// session.
	ErrBadSession = errors.New("console session ended (signed out, expired, or its key was deleted): sign in again")
	// ErrTenantNotFound: no tenant has the name given.
	ErrTenantNotFound = errors.New("tenant not found")
)

// Principal is who a credential speaks for: a key of a tenant (KeyID
// set), or a token of one of its sandboxes (SandboxID set).
type Principal struct {
	TenantID  string
	KeyID     string
	Admin     bool
	SandboxID string
}

func keyPrincipal(k Key) Principal {
	return Principal{TenantID: k.TenantID, KeyID: k.ID, Admin: k.Admin}
}

// Authenticate finds whom an API key or sandbox token belongs to, by the
// hash of the credential: no credential is ever compared as a string.
// Keys are cached for a few seconds (keyCacheTTL); tokens, which expire,
// always reach the store.
func (s *Service) Authenticate(ctx context.Context, credential string) (Principal, error) {
	switch {
	case strings.HasPrefix(credential, KeyPrefix):
		hash := HashCredential(credential)
		k, ok, gen := s.keys.get(hash, s.now())
		if !ok || s.noCache {
			var err error
			if k, err = s.st.KeyByHash(ctx, hash); err != nil {
				return Principal{}, lookupError(err)
			}
			if !s.noCache {
				s.keys.put(k, gen, s.now())
			}
		}
		return keyPrincipal(k), nil
	case strings.HasPrefix(credential, TokenPrefix):
		t, err := s.st.TokenByHash(ctx, HashCredential(credential))
		if err != nil {
			return Principal{}, lookupError(err)
		}
		if !s.now().Before(t.ExpiresAt) {
			return Principal{}, ErrBadCredential
		}
		return Principal{TenantID: t.TenantID, SandboxID: t.SandboxID}, nil
	}
	return Principal{}, ErrBadCredential
}

// lookupError turns "not found" into ErrBadCredential: an unknown
// credential and a deleted one look the same to the caller.
func lookupError(err error) error {
	if errors.Is(err, errdefs.ErrNotFound) {
		return ErrBadCredential
	}
	return err
}
