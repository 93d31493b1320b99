package sqlite

import (
	"context"
	"fmt"

	"github.com/airlockhq/airlock/internal/store"
)

// migrations[i] brings the schema from version i to i+1. Append only: a
// shipped migration never changes, because databases already ran it.
var migrations = []string{
	`CREATE TABLE tenants (
		id            TEXT PRIMARY KEY,
		name          TEXT NOT NULL UNIQUE,
		max_sandboxes INTEGER NOT NULL,
		max_memory_mb INTEGER NOT NULL,
		created_at    INTEGER
	);
	CREATE TABLE keys (
		id         TEXT PRIMARY KEY,
		tenant_id  TEXT NOT NULL REFERENCES tenants(id),
		name       TEXT NOT NULL,
		hash       BLOB NOT NULL UNIQUE,
		admin      INTEGER NOT NULL,
		created_at INTEGER
	);
	CREATE INDEX keys_tenant ON keys(tenant_id);
	CREATE TABLE tokens (
		id         TEXT PRIMARY KEY,
		sandbox_id TEXT NOT NULL,
		tenant_id  TEXT NOT NULL,
		hash       BLOB NOT NULL UNIQUE,
		expires_at INTEGER
	);
	CREATE INDEX tokens_sandbox ON tokens(sandbox_id);
	CREATE TABLE sandboxes (
		id         TEXT PRIMARY KEY,
		tenant_id  TEXT NOT NULL,
		state      TEXT NOT NULL,
		reason     TEXT NOT NULL,
		template   TEXT NOT NULL,
		cpus       REAL NOT NULL,
		memory_mb  INTEGER NOT NULL,
		pids       INTEGER NOT NULL,
		disk_mb    INTEGER NOT NULL,
		env        TEXT,
		metadata   TEXT,
		workdir    TEXT NOT NULL,
		created_at INTEGER,
		expires_at INTEGER,
		ended_at   INTEGER
	);
	CREATE INDEX sandboxes_tenant_state ON sandboxes(tenant_id, state);`,
	// The reaper asks for the next expiry and for what has expired.
	`CREATE INDEX sandboxes_state_expires ON sandboxes(state, expires_at);`,
	// The network policy (JSON) and the egress proxy's connection log.
	`ALTER TABLE sandboxes ADD COLUMN network TEXT NOT NULL DEFAULT '';
	CREATE TABLE net_events (
		id         INTEGER PRIMARY KEY AUTOINCREMENT,
		sandbox_id TEXT NOT NULL,
		tenant_id  TEXT NOT NULL,
		time       INTEGER NOT NULL,
		data       TEXT NOT NULL
	);
	CREATE INDEX net_events_sandbox ON net_events(sandbox_id, id);`,
	// Tenant secrets, sealed by package secrets, and the placeholders each
	// sandbox was given for the ones bound to it.
	`CREATE TABLE secrets (
		tenant_id  TEXT NOT NULL,
		name       TEXT NOT NULL,
		hosts      TEXT NOT NULL,
		inject     TEXT NOT NULL,
		body       INTEGER NOT NULL,
		sealed     BLOB NOT NULL,
		created_at INTEGER,
		rotated_at INTEGER,
		PRIMARY KEY (tenant_id, name)
	);
	ALTER TABLE sandboxes ADD COLUMN secrets TEXT NOT NULL DEFAULT '';`,
	// Idle timeouts.
	`ALTER TABLE sandboxes ADD COLUMN idle_timeout_s INTEGER NOT NULL DEFAULT 0;`,
	// A sandbox's tokens end with it, in the same write that ends it: no
	// window in which a stopped sandbox has live tokens, and no second
	// statement on every delete.
	`CREATE TRIGGER sandboxes_end_tokens AFTER UPDATE OF state ON sandboxes
		WHEN NEW.state IN ('stopped', 'failed')
	BEGIN
		DELETE FROM tokens WHERE sandbox_id = NEW.id;
	END;`,
	// Audit logs (audit.go).
	auditSchema,
	// Per-sandbox usage, for metering (usage.go).
	usageSchema,
	// Tenant event streams and webhooks (events.go).
	eventsSchema,
	// The browser console's sign-in sessions (console.go).
	consoleSchema,
	// Tasks, their events and artifacts (tasks.go).
	tasksSchema,
	// Tenant storage quotas and what each tenant keeps (storage.go).
	storageSchema,
	// When each sandbox was last used, for idle timers that go on across
	// a restart (idle.go). Not one of sandboxCols: written on its
	// own, it never races a whole-row write.
	`ALTER TABLE sandboxes ADD COLUMN idle_since INTEGER;`,
	// How far a running task got, for the next daemon to go on from
	// (tasks.go).
	`ALTER TABLE tasks ADD COLUMN progress TEXT NOT NULL DEFAULT '';`,
	// Connections in flight through a sandbox's egress proxy or into its
	// ports, so a crash cuts none unlogged (liveconns.go).
	liveConnsSchema,
	// Nodes, their join tokens and the node CA (nodes.go).
	nodesSchema,
	// The node each sandbox runs on; those from before nodes ran here.
	`ALTER TABLE sandboxes ADD COLUMN node TEXT NOT NULL DEFAULT 'local';`,
	// Pause, snapshot, fork and volume settings (Sandbox.Lifecycle), and
	// the snapshots and volumes themselves (disks.go).
	`ALTER TABLE sandboxes ADD COLUMN lifecycle TEXT NOT NULL DEFAULT '';` + store.DisksSchema,
	// What a sandbox's model calls used and cost, counted at the egress
	// proxy (SandboxUsage.Model).
	// The memory limit, for memory priced by the GiB-second.
	`ALTER TABLE sandbox_usage ADD COLUMN memory_mb INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sandbox_usage ADD COLUMN model_calls INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sandbox_usage ADD COLUMN model_calls_unmetered INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sandbox_usage ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sandbox_usage ADD COLUMN cached_input_tokens INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sandbox_usage ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sandbox_usage ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sandbox_usage ADD COLUMN model_cost_usd REAL NOT NULL DEFAULT 0;`,
	// Approvals: questions put to a person (approvals.go).
	store.ApprovalsSchema,
}

// migrate applies the migrations the database has not run yet, in one
// transaction so a crash leaves the old version intact.
func (s *Store) migrate(ctx context.Context) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: see _txlock
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()

	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return fmt.Errorf("migrate: read version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary's %d", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migrate to version %d: %w", i+1, err)
		}
	}
	if v < len(migrations) {
		if _, err := tx.ExecContext(ctx, `DELETE FROM schema_version`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, len(migrations)); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	return tx.Commit()
}
