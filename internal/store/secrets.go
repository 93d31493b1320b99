package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
)

// SecretCols are the columns ScanSecret reads.
const SecretCols = `tenant_id, name, hosts, inject, body, sealed, created_at, rotated_at`

// ScanSecret reads a row of the secret columns.
func ScanSecret(r Scanner) (Secret, error) {
	var sec Secret
	var hosts string
	var created, rotated sql.NullInt64
	err := r.Scan(&sec.TenantID, &sec.Name, &hosts, &sec.Inject, &sec.Body, &sec.Sealed, &created, &rotated)
	if err != nil {
		return Secret{}, NotFound(err)
	}
	if err := json.Unmarshal([]byte(hosts), &sec.Hosts); err != nil {
		return Secret{}, fmt.Errorf("secret %q of tenant %s: decode hosts: %w", sec.Name, sec.TenantID, err)
	}
	sec.CreatedAt, sec.RotatedAt = FromNanos(created), FromNanos(rotated)
	return sec, nil
}

// EncodeHosts stores hosts as a JSON array; nil is stored as [] (so hosts
// is never NULL) and reads back as an empty, non-nil slice.
func EncodeHosts(hosts []string) (string, error) {
	if hosts == nil {
		hosts = []string{}
	}
	b, err := json.Marshal(hosts)
	if err != nil {
		return "", fmt.Errorf("encode hosts: %w", err)
	}
	return string(b), nil
}
