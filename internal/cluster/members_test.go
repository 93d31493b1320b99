package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/testenv"
)

// membersBackend is one implementation of Members under test, with a
// way to renew a member once and never again, as a replica killed
// without leaving does.
type membersBackend struct {
	name string
	make func(t *testing.T, opts MembersOptions) (Members, func(ctx context.Context, m Member) error)
}

var membersBackends = []membersBackend{
	{"lease", func(t *testing.T, opts MembersOptions) (Members, func(context.Context, Member) error) {
		cs, ns := kubeNamespace(t)
		m := NewLeaseMembers(cs, ns, opts)
		return m, m.renew
	}},
	{"postgres", func(t *testing.T, opts MembersOptions) (Members, func(context.Context, Member) error) {
		m, err := NewPGMembers(testenv.NewDatabase(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		return m, func(ctx context.Context, mb Member) error {
			conn, err := m.connect(ctx)
			if err != nil {
				return err
			}
			defer closePG(conn)
			return m.renew(ctx, conn, mb)
		}
	}},
}

// TestMembers: a member that joins is listed with its URL while it
// renews; one that leaves is gone at once; one that dies without leaving
// is gone once its renewal is Duration old; a bad id is refused.
func TestMembers(t *testing.T) {
	for _, b := range membersBackends {
		t.Run(b.name, func(t *testing.T) {
			opts := MembersOptions{RenewEvery: 200 * time.Millisecond, Duration: 2 * time.Second}
			m, renewOnce := b.make(t, opts)
			ctx := context.Background()
			ids := func() []string {
				list, err := m.List(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, mb := range list {
					out = append(out, mb.ID+" "+mb.URL)
					if time.Since(mb.RenewedAt) > opts.Duration+time.Second || time.Until(mb.RenewedAt) > time.Second {
						t.Errorf("member %s renewed at %s", mb.ID, mb.RenewedAt)
					}
				}
				return out
			}
			join := func(id, url string) (stop func()) {
				jctx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- m.Join(jctx, Member{ID: id, URL: url}) }()
				stop = func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("join %s: %v", id, err)
					}
				}
				t.Cleanup(func() {
					select {
					case <-jctx.Done():
					default:
						stop()
					}
				})
				return stop
			}
			stopA := join("a", "http://10.0.0.1:8080")
			join("b", "http://10.0.0.2:8080")
			want := []string{"a http://10.0.0.1:8080", "b http://10.0.0.2:8080"}
			waitFor(t, 5*time.Second, "both members listed", func() bool { return cmp.Equal(ids(), want) })
			// Renewals go on past the duration.
			time.Sleep(opts.Duration + 500*time.Millisecond)
			if diff := cmp.Diff(want, ids()); diff != "" {
				t.Errorf("members after a duration of renewals (-want +got):\n%s", diff)
			}
			stopA()
			if diff := cmp.Diff([]string{"b http://10.0.0.2:8080"}, ids()); diff != "" {
				t.Errorf("members after a left (-want +got):\n%s", diff)
			}
			if err := renewOnce(ctx, Member{ID: "c", URL: "http://10.0.0.3:8080"}); err != nil {
				t.Fatal(err)
			}
			if got := ids(); len(got) != 2 {
				t.Errorf("members after c renewed once: %v", got)
			}
			waitFor(t, opts.Duration+3*time.Second, "c, never renewed again, is not live", func() bool {
				return cmp.Equal(ids(), []string{"b http://10.0.0.2:8080"})
			})
			if err := m.Join(ctx, Member{ID: "Bad_ID"}); err == nil {
				t.Error("a member with a bad id joined")
			}
		})
	}
}
