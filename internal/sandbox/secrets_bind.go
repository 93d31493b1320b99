package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox/sandboxrec"
	"github.com/airlockhq/airlock/internal/secrets"
	"github.com/airlockhq/airlock/internal/store"
)

// Where a sandbox with secrets finds its CA: the CA alone, and the
// template's roots plus the CA (for tools that take one bundle).
const (
	caDir    = "/home/user/.airlock"
	caFile   = caDir + "/ca.pem"
	caBundle = caDir + "/ca-bundle.pem"
	// sandboxRoots is the template's trust store, copied from the host's.
	sandboxRoots = "/etc/ssl/certs/ca-certificates.crt"
)

// caEnv points every common TLS stack at the sandbox's bundle.
var caEnv = map[string]string{
	"SSL_CERT_FILE":       caBundle,
	"REQUESTS_CA_BUNDLE":  caBundle,
	"CURL_CA_BUNDLE":      caBundle,
	"GIT_SSL_CAINFO":      caBundle,
	"NODE_EXTRA_CA_CERTS": caFile,
}

// boundSecrets is what a sandbox's record keeps about the secrets bound at
// create: placeholders (not secret: they mean nothing outside this
// sandbox's proxy) and its CA, whose key is sealed.
type boundSecrets struct {
	Placeholders map[string]string `json:"placeholders"` // name -> placeholder
	CACert       string            `json:"ca_cert"`
	CAKey        []byte            `json:"ca_key"` // sealed PKCS#8
}

func caAD(sandboxID string) []byte { return []byte("sandbox-ca\x00" + sandboxID) }

// bindSecrets checks the names a create request binds, makes the sandbox's
// placeholders and CA, and returns the record's JSON and the policy with
// the secrets' hosts allowed.
func (s *Service) bindSecrets(ctx context.Context, tenantID, id string, names []string, pol *egress.Policy) (string, *egress.Policy, error) {
	if s.box == nil || s.proxy == nil {
		return "", nil, fmt.Errorf("%w: secrets: this server has no master key or egress proxy", ErrInvalid)
	}
	out := egress.Policy{Mode: egress.ModeAllowlist}
	if pol != nil && pol.Mode != egress.ModeNone {
		out.Allow = slices.Clone(pol.Allow)
	}
	if pol != nil {
		// Ask too: binding a secret must not turn a held host into a
		// refused one.
		out.Deny, out.Ask, out.AskTimeoutS = slices.Clone(pol.Deny), pol.Ask, pol.AskTimeoutS
		out.Ask.Patterns = slices.Clone(pol.Ask.Patterns)
	}
	b := boundSecrets{Placeholders: map[string]string{}}
	for i, name := range names {
		if err := secrets.ValidateName(name); err != nil {
			return "", nil, fmt.Errorf("%w: secrets[%d]: %v", ErrInvalid, i, err)
		}
		if _, dup := b.Placeholders[name]; dup {
			return "", nil, fmt.Errorf("%w: secrets[%d]: %q is listed twice", ErrInvalid, i, name)
		}
		sec, err := s.st.GetSecret(ctx, tenantID, name)
		if errors.Is(err, store.ErrNotFound) {
			return "", nil, fmt.Errorf("%w: secrets[%d]: no secret named %q (create it with POST /v1/secrets)", ErrInvalid, i, name)
		}
		if err != nil {
			return "", nil, err
		}
		b.Placeholders[name] = secrets.NewPlaceholder()
		for _, h := range sec.Hosts {
			if !slices.Contains(out.Allow, h) {
				out.Allow = append(out.Allow, h)
			}
		}
	}
	ca, err := egress.NewCA(id)
	if err != nil {
		return "", nil, fmt.Errorf("sandbox CA: %w", err)
	}
	b.CACert, b.CAKey = string(ca.CertPEM()), s.box.Seal(ca.KeyPKCS8(), caAD(id))
	enc, err := json.Marshal(b)
	if err != nil {
		return "", nil, err
	}
	return string(enc), &out, nil
}

// sandboxSecrets is what a sandbox's proxy and commands get from the
// secrets bound to it.
type sandboxSecrets struct {
	ca       *egress.CA
	bindings []egress.Binding  // the secrets that still exist
	env      map[string]string // placeholders and CA paths
	names    []string          // every name bound at create, deleted ones too, so a secret re-created under one is picked up by rebind
}

// loadBindings opens a sandbox's CA and the current values of its bound
// secrets. A secret deleted since is left out: its placeholder goes out
// unchanged.
func (s *Service) loadBindings(ctx context.Context, rec sandboxrec.Sandbox) (sandboxSecrets, error) {
	var b boundSecrets
	if err := json.Unmarshal([]byte(rec.Secrets), &b); err != nil {
		return sandboxSecrets{}, fmt.Errorf("sandbox %s: decode secrets: %w", rec.ID, err)
	}
	if s.box == nil {
		return sandboxSecrets{}, fmt.Errorf("sandbox %s has secrets but this server has no master key", rec.ID)
	}
	key, err := s.box.Open(b.CAKey, caAD(rec.ID))
	if err != nil {
		return sandboxSecrets{}, fmt.Errorf("sandbox %s: open CA key: %w", rec.ID, err)
	}
	ca, err := egress.LoadCA([]byte(b.CACert), key)
	if err != nil {
		return sandboxSecrets{}, fmt.Errorf("sandbox %s: CA: %w", rec.ID, err)
	}
	var out []egress.Binding
	for _, name := range slices.Sorted(maps.Keys(b.Placeholders)) {
		sec, err := s.st.GetSecret(ctx, rec.TenantID, name)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return sandboxSecrets{}, err
		}
		value, err := s.box.Open(sec.Sealed, secretAD(rec.TenantID, name))
		if err != nil {
			return sandboxSecrets{}, fmt.Errorf("secret %s: %w", name, err)
		}
		bd := egress.Binding{Name: name, Placeholder: b.Placeholders[name], Value: value, Hosts: sec.Hosts, Body: sec.Body}
		if sec.Inject != "" {
			var inj secrets.Inject
			if err := json.Unmarshal([]byte(sec.Inject), &inj); err != nil {
				return sandboxSecrets{}, fmt.Errorf("secret %s: decode inject: %w", name, err)
			}
			bd.Header, bd.Format = inj.Header, inj.Format
		}
		out = append(out, bd)
	}
	env := maps.Clone(caEnv)
	maps.Copy(env, b.Placeholders)
	return sandboxSecrets{ca: ca, bindings: out, env: env, names: slices.Sorted(maps.Keys(b.Placeholders))}, nil
}

// scrubber takes the bound secrets' values out of what is recorded.
func (b sandboxSecrets) scrubber() *audit.Scrubber {
	values := make(map[string]string, len(b.bindings))
	for _, bd := range b.bindings {
		values[bd.Name] = string(bd.Value)
	}
	return audit.NewScrubber(values)
}

// installCA writes the sandbox's CA, and a bundle of the template's roots
// plus it, where caEnv points.
func installCA(ctx context.Context, sb runtime.Sandbox, caPEM []byte) error {
	var roots strings.Builder
	if _, err := sb.ReadFile(ctx, sandboxRoots, &roots); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("read the sandbox's roots: %w", err)
	}
	if err := sb.MkdirAll(ctx, caDir, 0o755); err != nil {
		return err
	}
	if _, err := sb.WriteFile(ctx, caFile, strings.NewReader(string(caPEM)), 0o444); err != nil {
		return err
	}
	bundle := roots.String()
	if bundle != "" && !strings.HasSuffix(bundle, "\n") {
		bundle += "\n"
	}
	_, err := sb.WriteFile(ctx, caBundle, strings.NewReader(bundle+string(caPEM)), 0o444)
	return err
}

// rebind gives every attached sandbox of tenantID bound to secret name its
// current value (after a rotation) or none (after a delete).
func (s *Service) rebind(ctx context.Context, tenantID, name string) {
	s.netMu.Lock()
	var ids []string
	for id, ns := range s.attached {
		if ns.tenant == tenantID && slices.Contains(ns.secrets, name) {
			ids = append(ids, id)
		}
	}
	s.netMu.Unlock()
	for _, id := range ids {
		rec, err := s.st.GetSandbox(ctx, id)
		if err != nil {
			s.log.Error("rebind secret", "sandbox", id, "secret", name, "err", err)
			continue
		}
		sec, err := s.loadBindings(ctx, rec)
		if ns := s.netState(id); err == nil && ns != nil {
			// Outside netMu: a node's proxy is a call away.
			err = ns.att.SetSecrets(ctx, sec.ca, sec.bindings)
			s.netMu.Lock()
			ns.scrub = sec.scrubber().Merge(ns.scrub)
			s.netMu.Unlock()
		}
		if err != nil {
			s.log.Error("rebind secret", "sandbox", id, "secret", name, "err", err)
		}
	}
}
