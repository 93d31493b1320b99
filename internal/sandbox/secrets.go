package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/store"
)

// SecretInfo is a secret as the API shows it: never its value.
type SecretInfo struct {
	Name      string          `json:"name"`
	Hosts     []string        `json:"hosts"`
	Inject    *secrets.Inject `json:"inject,omitempty"`
	Body      bool            `json:"body"`
	CreatedAt time.Time       `json:"created_at"`
	RotatedAt time.Time       `json:"rotated_at,omitzero"`
}

// RotateRequest is PUT /v1/secrets/{name}: a new value, and optionally new
// hosts, injection and body settings (absent fields keep theirs).
type RotateRequest struct {
	Value  string          `json:"value"`
	Hosts  []string        `json:"hosts,omitempty"`
	Inject *secrets.Inject `json:"inject,omitempty"`
	Body   *bool           `json:"body,omitempty"`
}

// secretAD binds a sealed value to its row: a ciphertext copied into
// another tenant's or name's row does not open.
func secretAD(tenantID, name string) []byte { return []byte("secret\x00" + tenantID + "\x00" + name) }

func (s *Service) secretsReady(c Caller) error {
	switch {
	case c.TenantID == "" || c.SandboxID != "":
		return fmt.Errorf("%w: secrets are managed with an API key, not a sandbox token", ErrInvalid)
	case s.box == nil:
		return fmt.Errorf("%w: this server has no master key for secrets", ErrUnavailable)
	case s.proxy == nil:
		return fmt.Errorf("%w: this server runs without the egress proxy that injects secrets", ErrUnavailable)
	}
	return nil
}

// CreateSecret stores a tenant's secret, its value sealed.
func (s *Service) CreateSecret(ctx context.Context, c Caller, spec secrets.Spec) (SecretInfo, error) {
	if err := s.secretsReady(c); err != nil {
		return SecretInfo{}, err
	}
	if spec.Value == "" {
		return SecretInfo{}, fmt.Errorf("%w: field \"value\" is required", ErrInvalid)
	}
	spec.Normalize()
	if err := spec.Validate(); err != nil {
		return SecretInfo{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	rec, err := secretRecord(c.TenantID, spec, s.now())
	if err != nil {
		return SecretInfo{}, err
	}
	rec.Sealed = s.box.Seal([]byte(spec.Value), secretAD(c.TenantID, spec.Name))
	if err := s.st.CreateSecret(ctx, rec); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return SecretInfo{}, fmt.Errorf("%w: secret %q exists; rotate it with PUT /v1/secrets/%s", ErrConflict, spec.Name, spec.Name)
		}
		return SecretInfo{}, err
	}
	return secretInfo(rec)
}

// ListSecrets returns the tenant's secrets, without values.
func (s *Service) ListSecrets(ctx context.Context, c Caller) ([]SecretInfo, error) {
	if c.TenantID == "" || c.SandboxID != "" {
		return nil, fmt.Errorf("%w: secrets are managed with an API key, not a sandbox token", ErrInvalid)
	}
	recs, err := s.st.ListSecrets(ctx, c.TenantID)
	if err != nil {
		return nil, err
	}
	out := make([]SecretInfo, 0, len(recs))
	for _, r := range recs {
		info, err := secretInfo(r)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// RotateSecret replaces a secret's value (and optionally its hosts and
// injection). Every sandbox bound to it uses the new value from its next
// request on.
func (s *Service) RotateSecret(ctx context.Context, c Caller, name string, req RotateRequest) (SecretInfo, error) {
	if err := s.secretsReady(c); err != nil {
		return SecretInfo{}, err
	}
	old, err := s.st.GetSecret(ctx, c.TenantID, name)
	if errors.Is(err, store.ErrNotFound) {
		return SecretInfo{}, fmt.Errorf("%w: secret %q", ErrNotFound, name)
	}
	if err != nil {
		return SecretInfo{}, err
	}
	cur, err := secretInfo(old)
	if err != nil {
		return SecretInfo{}, err
	}
	spec := secrets.Spec{Name: name, Value: req.Value, Hosts: cur.Hosts, Inject: cur.Inject, Body: cur.Body}
	if req.Hosts != nil {
		spec.Hosts = req.Hosts
	}
	if req.Inject != nil {
		spec.Inject = req.Inject
	}
	if req.Body != nil {
		spec.Body = *req.Body
	}
	if spec.Value == "" {
		return SecretInfo{}, fmt.Errorf("%w: field \"value\" is required", ErrInvalid)
	}
	spec.Normalize()
	if err := spec.Validate(); err != nil {
		return SecretInfo{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	rec, err := secretRecord(c.TenantID, spec, old.CreatedAt)
	if err != nil {
		return SecretInfo{}, err
	}
	rec.RotatedAt = s.now()
	rec.Sealed = s.box.Seal([]byte(spec.Value), secretAD(c.TenantID, name))
	if err := s.st.UpdateSecret(ctx, rec); err != nil {
		return SecretInfo{}, err
	}
	s.rebind(ctx, c.TenantID, name)
	return secretInfo(rec)
}

// DeleteSecret removes a secret; bound sandboxes stop getting it at once
// (their placeholder goes out as it is).
func (s *Service) DeleteSecret(ctx context.Context, c Caller, name string) error {
	if c.TenantID == "" || c.SandboxID != "" {
		return fmt.Errorf("%w: secrets are managed with an API key, not a sandbox token", ErrInvalid)
	}
	if err := s.st.DeleteSecret(ctx, c.TenantID, name); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: secret %q", ErrNotFound, name)
		}
		return err
	}
	s.rebind(ctx, c.TenantID, name)
	return nil
}

func secretRecord(tenantID string, spec secrets.Spec, created time.Time) (store.Secret, error) {
	rec := store.Secret{TenantID: tenantID, Name: spec.Name, Hosts: spec.Hosts, Body: spec.Body, CreatedAt: created}
	if spec.Inject != nil {
		b, err := json.Marshal(spec.Inject)
		if err != nil {
			return rec, err
		}
		rec.Inject = string(b)
	}
	return rec, nil
}

func secretInfo(r store.Secret) (SecretInfo, error) {
	info := SecretInfo{Name: r.Name, Hosts: slices.Clone(r.Hosts), Body: r.Body, CreatedAt: r.CreatedAt, RotatedAt: r.RotatedAt}
	if r.Inject != "" {
		info.Inject = &secrets.Inject{}
		if err := json.Unmarshal([]byte(r.Inject), info.Inject); err != nil {
			return info, fmt.Errorf("secret %s: decode inject: %w", r.Name, err)
		}
	}
	if info.Hosts == nil {
		info.Hosts = []string{}
	}
	return info, nil
}
