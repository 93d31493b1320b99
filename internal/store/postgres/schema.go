package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/internal/store"
)

// migrations[i] brings the schema from version i to i+1, in PostgreSQL's
// dialect. Append only: a shipped migration never changes, because
// databases already ran it. The first is the SQLite store's schema as of
// its 18th migration, in one piece. Text that is ordered or compared by
// range (ids, names) is COLLATE "C", byte order, as SQLite orders it:
// pages resumed with "after id" must not depend on the server's locale.
var migrations = []string{
	`CREATE TABLE tenants (
		id             TEXT COLLATE "C" PRIMARY KEY,
		name           TEXT COLLATE "C" NOT NULL UNIQUE,
		max_sandboxes  BIGINT NOT NULL,
		max_memory_mb  BIGINT NOT NULL,
		max_storage_mb BIGINT NOT NULL DEFAULT 2048,
		created_at     BIGINT
	);
	CREATE TABLE keys (
		id         TEXT COLLATE "C" PRIMARY KEY,
		tenant_id  TEXT COLLATE "C" NOT NULL REFERENCES tenants(id),
		name       TEXT NOT NULL,
		hash       BYTEA NOT NULL UNIQUE,
		admin      BOOLEAN NOT NULL,
		created_at BIGINT
	);
	CREATE INDEX keys_tenant ON keys(tenant_id);
	-- A session lives no longer than its key.
	CREATE TABLE console_sessions (
		hash       BYTEA PRIMARY KEY,
		key_id     TEXT COLLATE "C" NOT NULL REFERENCES keys(id) ON DELETE CASCADE,
		created_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL
	);
	CREATE INDEX console_sessions_key ON console_sessions(key_id);
	CREATE INDEX console_sessions_expires ON console_sessions(expires_at);
	CREATE TABLE tokens (
		id         TEXT PRIMARY KEY,
		sandbox_id TEXT NOT NULL,
		tenant_id  TEXT NOT NULL,
		hash       BYTEA NOT NULL UNIQUE,
		expires_at BIGINT
	);
	CREATE INDEX tokens_sandbox ON tokens(sandbox_id);
	CREATE TABLE sandboxes (
		id             TEXT COLLATE "C" PRIMARY KEY,
		tenant_id      TEXT NOT NULL,
		state          TEXT NOT NULL,
		reason         TEXT NOT NULL,
		template       TEXT NOT NULL,
		cpus           DOUBLE PRECISION NOT NULL,
		memory_mb      BIGINT NOT NULL,
		pids           BIGINT NOT NULL,
		disk_mb        BIGINT NOT NULL,
		env            TEXT,
		metadata       JSONB,
		workdir        TEXT NOT NULL,
		created_at     BIGINT,
		expires_at     BIGINT,
		ended_at       BIGINT,
		network        TEXT NOT NULL DEFAULT '',
		secrets        TEXT NOT NULL DEFAULT '',
		idle_timeout_s BIGINT NOT NULL DEFAULT 0,
		idle_since     BIGINT,
		node           TEXT NOT NULL DEFAULT 'local'
	);
	CREATE INDEX sandboxes_tenant_state ON sandboxes(tenant_id, state);
	CREATE INDEX sandboxes_state_expires ON sandboxes(state, expires_at);
	-- A sandbox's tokens end in the write that ends it: no window in
	-- which a stopped sandbox has live tokens.
	CREATE FUNCTION sandboxes_end_tokens() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		DELETE FROM tokens WHERE sandbox_id = NEW.id;
		RETURN NULL;
	END $$;
	CREATE TRIGGER sandboxes_end_tokens AFTER UPDATE OF state ON sandboxes
		FOR EACH ROW WHEN (NEW.state IN ('stopped', 'failed'))
		EXECUTE FUNCTION sandboxes_end_tokens();
	CREATE TABLE net_events (
		id         BIGSERIAL PRIMARY KEY,
		sandbox_id TEXT NOT NULL,
		tenant_id  TEXT NOT NULL,
		time       BIGINT NOT NULL,
		data       BYTEA NOT NULL
	);
	CREATE INDEX net_events_sandbox ON net_events(sandbox_id, id);
	CREATE TABLE secrets (
		tenant_id  TEXT NOT NULL,
		name       TEXT COLLATE "C" NOT NULL,
		hosts      TEXT NOT NULL,
		inject     TEXT NOT NULL,
		body       BOOLEAN NOT NULL,
		sealed     BYTEA NOT NULL,
		created_at BIGINT,
		rotated_at BIGINT,
		PRIMARY KEY (tenant_id, name)
	);
	CREATE TABLE audit_events (
		sandbox_id TEXT NOT NULL,
		seq        BIGINT NOT NULL,
		time       BIGINT NOT NULL,
		tenant_id  TEXT NOT NULL,
		actor      TEXT NOT NULL,
		type       TEXT NOT NULL,
		data       BYTEA NOT NULL,
		prev       TEXT NOT NULL,
		hash       TEXT NOT NULL,
		PRIMARY KEY (sandbox_id, seq)
	);
	CREATE INDEX audit_events_time ON audit_events(time);
	CREATE TABLE audit_heads (
		sandbox_id    TEXT PRIMARY KEY,
		tenant_id     TEXT NOT NULL,
		seq           BIGINT NOT NULL,
		hash          TEXT NOT NULL,
		time          BIGINT NOT NULL,
		output_capped BOOLEAN NOT NULL DEFAULT false
	);
	CREATE INDEX audit_heads_time ON audit_heads(time);
	CREATE TABLE sandbox_usage (
		sandbox_id        TEXT PRIMARY KEY,
		tenant_id         TEXT COLLATE "C" NOT NULL,
		created_at        BIGINT NOT NULL,
		ended_at          BIGINT,
		updated_at        BIGINT,
		cpu_seconds       DOUBLE PRECISION NOT NULL,
		memory_peak_bytes BIGINT NOT NULL,
		egress_bytes_out  BIGINT NOT NULL,
		egress_bytes_in   BIGINT NOT NULL,
		exec_count        BIGINT NOT NULL
	);
	CREATE INDEX sandbox_usage_created ON sandbox_usage(created_at);
	CREATE INDEX sandbox_usage_tenant ON sandbox_usage(tenant_id, created_at);
	CREATE TABLE tenant_events (
		id         BIGSERIAL PRIMARY KEY,
		tenant_id  TEXT NOT NULL,
		sandbox_id TEXT NOT NULL,
		type       TEXT NOT NULL,
		time       BIGINT NOT NULL,
		data       BYTEA NOT NULL
	);
	CREATE INDEX tenant_events_tenant ON tenant_events(tenant_id, id);
	CREATE INDEX tenant_events_time ON tenant_events(time);
	CREATE TABLE webhooks (
		id         TEXT COLLATE "C" PRIMARY KEY,
		tenant_id  TEXT NOT NULL,
		url        TEXT NOT NULL,
		events     TEXT NOT NULL,
		sealed     BYTEA NOT NULL,
		created_at BIGINT
	);
	CREATE INDEX webhooks_tenant ON webhooks(tenant_id);
	CREATE TABLE webhook_deliveries (
		id          TEXT COLLATE "C" PRIMARY KEY,
		webhook_id  TEXT NOT NULL,
		tenant_id   TEXT NOT NULL,
		event_id    BIGINT NOT NULL,
		event_type  TEXT NOT NULL,
		state       TEXT NOT NULL,
		attempts    BIGINT NOT NULL,
		next_at     BIGINT,
		last_status BIGINT NOT NULL,
		last_error  TEXT NOT NULL,
		created_at  BIGINT,
		ended_at    BIGINT,
		UNIQUE (webhook_id, event_id)
	);
	CREATE INDEX webhook_deliveries_due ON webhook_deliveries(state, next_at);
	CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_id);
	CREATE TABLE webhook_attempts (
		delivery_id TEXT COLLATE "C" NOT NULL,
		n           BIGINT NOT NULL,
		time        BIGINT NOT NULL,
		status      BIGINT NOT NULL,
		error       TEXT NOT NULL,
		duration_ms DOUBLE PRECISION NOT NULL,
		PRIMARY KEY (delivery_id, n)
	);
	CREATE TABLE tasks (
		id            TEXT COLLATE "C" PRIMARY KEY,
		tenant_id     TEXT NOT NULL,
		key_id        TEXT NOT NULL DEFAULT '',
		harness       TEXT NOT NULL,
		state         TEXT NOT NULL,
		reason        TEXT NOT NULL DEFAULT '',
		spec          TEXT NOT NULL,
		sandbox_id    TEXT NOT NULL DEFAULT '',
		exit_code     BIGINT,
		summary       TEXT NOT NULL DEFAULT '',
		created_at    BIGINT NOT NULL,
		started_at    BIGINT,
		ended_at      BIGINT,
		input_tokens  BIGINT NOT NULL DEFAULT 0,
		output_tokens BIGINT NOT NULL DEFAULT 0,
		progress      TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX tasks_tenant ON tasks(tenant_id, id);
	CREATE INDEX tasks_state ON tasks(state, created_at);
	CREATE TABLE task_events (
		task_id    TEXT NOT NULL,
		seq        BIGINT NOT NULL,
		time       BIGINT NOT NULL,
		type       TEXT NOT NULL,
		sandbox_id TEXT NOT NULL DEFAULT '',
		data       BYTEA NOT NULL,
		PRIMARY KEY (task_id, seq)
	);
	CREATE TABLE task_artifacts (
		task_id   TEXT NOT NULL,
		name      TEXT COLLATE "C" NOT NULL,
		kind      TEXT COLLATE "C" NOT NULL,
		size      BIGINT NOT NULL,
		sha256    TEXT NOT NULL,
		truncated BOOLEAN NOT NULL,
		content   BYTEA NOT NULL,
		PRIMARY KEY (task_id, kind, name)
	);
	CREATE TABLE tenant_storage (
		tenant_id TEXT PRIMARY KEY,
		bytes     BIGINT NOT NULL
	);
	CREATE TABLE live_conns (
		id         TEXT PRIMARY KEY,
		sandbox_id TEXT NOT NULL,
		kind       TEXT NOT NULL,
		opened_at  BIGINT NOT NULL,
		data       BYTEA NOT NULL
	);
	CREATE TABLE node_ca (
		id         INTEGER PRIMARY KEY CHECK (id = 1),
		cert       BYTEA NOT NULL,
		sealed_key BYTEA NOT NULL
	);
	CREATE TABLE node_tokens (
		id         TEXT PRIMARY KEY,
		hash       BYTEA NOT NULL,
		created_at BIGINT NOT NULL,
		expires_at BIGINT NOT NULL,
		used_at    BIGINT,
		used_by    TEXT NOT NULL DEFAULT ''
	);
	CREATE TABLE nodes (
		name            TEXT COLLATE "C" PRIMARY KEY,
		addr            TEXT NOT NULL,
		cert_serial     TEXT NOT NULL,
		cert_expires_at BIGINT NOT NULL,
		joined_at       BIGINT NOT NULL,
		drained         BOOLEAN NOT NULL DEFAULT false,
		version         TEXT NOT NULL DEFAULT '',
		capacity        TEXT NOT NULL DEFAULT '{}',
		use             TEXT NOT NULL DEFAULT '{}',
		last_heartbeat  BIGINT
	);`,
	// Pause, snapshot, fork and volume settings (sandboxrec.Sandbox.Lifecycle), and the
	// snapshots and volumes themselves (sandboxrec.Disk).
	`ALTER TABLE sandboxes ADD COLUMN lifecycle TEXT NOT NULL DEFAULT '';` + store.DisksSchema,
	// What a sandbox's model calls used and cost, counted at the egress
	// proxy (store.SandboxUsage.Model).
	// The memory limit, for memory priced by the GiB-second.
	`ALTER TABLE sandbox_usage ADD COLUMN memory_mb BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN model_calls BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN model_calls_unmetered BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN input_tokens BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN cached_input_tokens BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN output_tokens BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN reasoning_tokens BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN model_cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0;`,
	// Approvals: questions put to a person (approvals.Record).
	store.ApprovalsSchema,
}

// migrate applies the migrations the database has not run yet, in one
// transaction, so a crash leaves the old version intact. The transaction
// first takes an advisory lock: replicas starting together queue on it,
// and each one after the first finds the schema current.
func (s *Store) migrate(ctx context.Context) error {
	return s.tx(ctx, "migrate", func(tx pgx.Tx) error {
		if err := lock(ctx, tx, lockMigrate); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v); err != nil {
			return fmt.Errorf("migrate: read version: %w", err)
		}
		if v > len(migrations) {
			return fmt.Errorf("migrate: database schema version %d is newer than this binary's %d", v, len(migrations))
		}
		for i := v; i < len(migrations); i++ {
			// No arguments: pgx sends it as a simple query, which may
			// hold several statements.
			if _, err := tx.Exec(ctx, migrations[i]); err != nil {
				return fmt.Errorf("migrate to version %d: %w", i+1, err)
			}
		}
		if v == len(migrations) {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM schema_version`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, len(migrations)); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		return nil
	})
}
