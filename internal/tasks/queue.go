package tasks

import (
	"slices"
	"sync"
)

// queue admits tasks per tenant: at most limit(tenant) run at once, the
// rest wait and start in submission order. It only decides; start runs
// (outside the lock) what it admits.
type queue struct {
	mu      sync.Mutex
	limit   func(tenant string) int
	start   func(tenant, id string)
	tenants map[string]*tenantQueue
}

type tenantQueue struct {
	running int
	waiting []string
}

func newQueue(limit func(string) int, start func(tenant, id string)) *queue {
	return &queue{limit: limit, start: start, tenants: map[string]*tenantQueue{}}
}

// submit queues the task and starts what fits.
func (q *queue) submit(tenant, id string) {
	q.mu.Lock()
	t := q.tenantLocked(tenant)
	t.waiting = append(t.waiting, id)
	run := q.admitLocked(tenant, t)
	q.mu.Unlock()
	for _, id := range run {
		q.start(tenant, id)
	}
}

// resume starts a task an earlier daemon was running. It takes a slot of
// its tenant's whatever the limit: it held one when the daemon went.
func (q *queue) resume(tenant, id string) {
	q.mu.Lock()
	q.tenantLocked(tenant).running++
	q.mu.Unlock()
	q.start(tenant, id)
}

// done frees the slot of a task of the tenant that ended and starts the
// next.
func (q *queue) done(tenant string) {
	q.mu.Lock()
	t := q.tenants[tenant]
	if t == nil || t.running == 0 {
		q.mu.Unlock()
		panic("tasks: done without a running task")
	}
	t.running--
	run := q.admitLocked(tenant, t)
	q.mu.Unlock()
	for _, id := range run {
		q.start(tenant, id)
	}
}

// remove drops a waiting task; false if it is not waiting (started, or
// never queued).
func (q *queue) remove(tenant, id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.tenants[tenant]
	if t == nil {
		return false
	}
	i := slices.Index(t.waiting, id)
	if i < 0 {
		return false
	}
	t.waiting = slices.Delete(t.waiting, i, i+1)
	q.gcLocked(tenant, t)
	return true
}

// position is how many tasks of the tenant wait before id (-1: not
// waiting).
func (q *queue) position(tenant, id string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if t := q.tenants[tenant]; t != nil {
		return slices.Index(t.waiting, id)
	}
	return -1
}

func (q *queue) tenantLocked(tenant string) *tenantQueue {
	t := q.tenants[tenant]
	if t == nil {
		t = &tenantQueue{}
		q.tenants[tenant] = t
	}
	return t
}

func (q *queue) admitLocked(tenant string, t *tenantQueue) []string {
	limit := q.limit(tenant)
	var run []string
	for len(t.waiting) > 0 && (limit <= 0 || t.running < limit) {
		run = append(run, t.waiting[0])
		t.waiting = t.waiting[1:]
		t.running++
	}
	q.gcLocked(tenant, t)
	return run
}

func (q *queue) gcLocked(tenant string, t *tenantQueue) {
	if t.running == 0 && len(t.waiting) == 0 {
		delete(q.tenants, tenant)
	}
}
