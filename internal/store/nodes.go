package store

import (
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/airlockhq/airlock/internal/nodes"
)

// NodeCols are the columns ScanNode reads.
const NodeCols = `name, addr, cert_serial, cert_expires_at, joined_at, drained, version, capacity, use, last_heartbeat`

// ScanNode reads a row of NodeCols.
func ScanNode(sc Scanner) (nodes.Node, error) {
	var n nodes.Node
	var certExp, joined, beat sql.NullInt64
	var capacity, use string
	if err := sc.Scan(&n.Name, &n.Addr, &n.CertSerial, &certExp, &joined, &n.Drained, &n.Version, &capacity, &use, &beat); err != nil {
		return n, err
	}
	n.CertExpiresAt, n.JoinedAt = FromNanos(certExp), FromNanos(joined)
	if beat.Valid {
		b := FromNanos(beat)
		n.LastHeartbeat = &b
	}
	if err := json.Unmarshal([]byte(capacity), &n.Capacity); err != nil {
		return n, fmt.Errorf("node %s capacity: %w", n.Name, err)
	}
	if err := json.Unmarshal([]byte(use), &n.Use); err != nil {
		return n, fmt.Errorf("node %s use: %w", n.Name, err)
	}
	return n, nil
}
