package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/api"
	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/tenancy"
)

// adminKeyEnv names an admin API key given to the server (from a secret
// store) rather than made by it on first start.
const adminKeyEnv = "AIRLOCK_ADMIN_KEY"

// ensureEnvAdminKey makes key an admin key of the admin tenant unless the
// store has it already. Replicas starting at once may race to add it: the
// loser finds the winner's.
func ensureEnvAdminKey(ctx context.Context, st store.Store, key string) error {
	key = strings.TrimSpace(key)
	if err := checkAdminKey(key); err != nil {
		return err
	}
	hash := api.HashCredential(key)
	if k, err := st.KeyByHash(ctx, hash); err == nil {
		if !k.Admin {
			return fmt.Errorf("$%s is a key of tenant %s without admin rights", adminKeyEnv, k.TenantID)
		}
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	now := time.Now().UTC()
	t, err := st.TenantByName(ctx, adminTenant)
	if errors.Is(err, store.ErrNotFound) {
		t = tenancy.Tenant{ID: "t-" + adminTenant, Name: adminTenant, MaxStorageMB: store.DefaultMaxStorageMB, CreatedAt: now}
		if err = st.CreateTenant(ctx, t); errors.Is(err, store.ErrConflict) {
			t, err = st.TenantByName(ctx, adminTenant)
		}
	}
	if err != nil {
		return fmt.Errorf("admin tenant: %w", err)
	}
	err = st.CreateKey(ctx, tenancy.Key{ID: "k-admin-" + fmt.Sprintf("%x", hash[:6]), TenantID: t.ID, Name: "admin (" + adminKeyEnv + ")", Hash: hash, Admin: true, CreatedAt: now})
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	return err
}

// checkAdminKey refuses a $AIRLOCK_ADMIN_KEY that is not an API key, at
// start, before anything is opened.
func checkAdminKey(key string) error {
	if key = strings.TrimSpace(key); !strings.HasPrefix(key, api.KeyPrefix) || len(key) < len(api.KeyPrefix)+32 {
		return fmt.Errorf("$%s: want an API key, %s followed by at least 32 characters (make one with: echo %s$(openssl rand -hex 24))", adminKeyEnv, api.KeyPrefix, api.KeyPrefix)
	}
	return nil
}
