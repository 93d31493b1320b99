package e2e

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/client"
)

// TestConcurrentCreates: 100 sandboxes created at once by one client all
// work (or fail cleanly past the quota), run a command and are destroyed.
func TestConcurrentCreates(t *testing.T) {
	s := startServer(t, "")
	admin := s.admin()
	must[client.Tenant](t)(admin.CreateTenant(ctx, client.TenantRequest{Name: "many", MaxSandboxes: 80}))
	key := must[client.NewKey](t)(admin.CreateKey(ctx, "many", ""))
	c := client.New(s.url, key.Key)
	const n = 100
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, limited := 0, 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb, err := c.CreateSandbox(ctx, client.CreateRequest{MemoryMB: 64})
			if err != nil {
				mu.Lock()
				defer mu.Unlock()
				if errors.Is(err, client.ErrLimitExceeded) {
					limited++
				} else {
					t.Errorf("create %d: %v", i, err)
				}
				return
			}
			res, err := c.Exec(ctx, sb.ID, client.ExecRequest{Cmd: []string{"echo", fmt.Sprint(i)}})
			if err != nil || res.Stdout != fmt.Sprintln(i) {
				t.Errorf("exec in %s: %v %+v", sb.ID, err, res)
			}
			if err := c.DeleteSandbox(ctx, sb.ID); err != nil {
				t.Errorf("delete %s: %v", sb.ID, err)
			}
			mu.Lock()
			ok++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if ok+limited != n || ok < 80 {
		t.Errorf("%d created, %d refused by quota, want at least 80 created", ok, limited)
	}
	assertNoSandboxesLeft(t, s)
}
