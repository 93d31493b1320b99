package sandbox

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/secrets"
)

// TestBindSecretsKeepsAsk pins issue 26: binding secrets rebuilt the
// policy from its lists and dropped ask, so a sandbox with secrets had
// its asked hosts refused instead of held.
func TestBindSecretsKeepsAsk(t *testing.T) {
	box, err := secrets.NewBox([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{box: box, proxy: egress.New(egress.Config{})}
	for _, pol := range []egress.Policy{
		{Mode: egress.ModeAllowlist, Allow: []string{"pypi.org"}, Ask: egress.Ask{All: true}, AskTimeoutS: 30},
		{Mode: egress.ModeAllowlist, Deny: []string{"evil.test"}, Ask: egress.Ask{Patterns: []string{"*.github.com"}}},
	} {
		_, got, err := s.bindSecrets(context.Background(), "ten_1", "sb_1", nil, &pol)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(pol, *got); d != "" {
			t.Errorf("policy after binding no secrets (-want +got):\n%s", d)
		}
	}
}
