package sandboxtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/airlockhq/airlock/internal/store"
	"github.com/airlockhq/airlock/internal/store/postgres"
	"github.com/airlockhq/airlock/internal/testenv"
)

// StoreEnv picks the store of the packages' shared fixtures: "postgres",
// or unset for SQLite (the default, as serve's).
const StoreEnv = "AIRLOCK_TEST_STORE"

// openPostgres makes a database of its own on the suite's PostgreSQL
// server and opens the store on it; drop removes the database.
func openPostgres(name string) (store.Store, func() error, error) {
	base := os.Getenv(testenv.DatabaseURLEnv)
	if base == "" {
		return nil, nil, fmt.Errorf("%s=postgres needs $%s (gotest starts a server)", StoreEnv, testenv.DatabaseURLEnv)
	}
	b := make([]byte, 6)
	rand.Read(b)
	db := "p_" + name + "_" + hex.EncodeToString(b)
	if err := testenv.PostgresExec(base, "CREATE DATABASE "+db); err != nil {
		return nil, nil, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, nil, err
	}
	u.Path = "/" + db
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, u.String())
	if err != nil {
		testenv.DropDatabase(base, db)
		return nil, nil, err
	}
	return st, func() error { return testenv.DropDatabase(base, db) }, nil
}
