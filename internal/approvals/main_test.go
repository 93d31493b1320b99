package approvals_test

import (
	"testing"

	"github.com/airlockhq/airlock/internal/store/teststore"
)

// TestMain drops the template of the tests' PostgreSQL databases after
// them (teststore): the package's tests run on SQLite and on PostgreSQL.
func TestMain(m *testing.M) { teststore.Main(m) }
