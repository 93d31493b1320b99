package main

import (
	"context"
	"fmt"

	"github.com/airlockhq/airlock/internal/cluster"
)

// replicaLockKey is the PostgreSQL advisory lock the replicas of one
// database elect their leader with ("airlock" in ASCII, as a number).
const replicaLockKey int64 = 0x6169726c6f636b

// elector is how this replica takes part in the leader election: a Lease
// when it runs against Kubernetes, else an advisory lock on the database.
// It says which, for the log.
func (c replicaConfig) elector(ctx context.Context, self string) (leaderElector, string, error) {
	if c.kube != nil && c.kube.enabled() {
		el, err := c.kube.elector(self)
		if err != nil {
			return nil, "", fmt.Errorf("leader election: %w", err)
		}
		return el, "leader elected with a Lease", nil
	}
	el, err := cluster.NewPGElector(c.storeURL, replicaLockKey, self, cluster.ElectorOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("leader election: %w", err)
	}
	return el, "leader elected with a PostgreSQL advisory lock", nil
}
