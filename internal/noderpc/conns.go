package noderpc

import (
	"crypto/rand"
	"net"
	"sync"
	"time"
)

// pickupWait bounds how long an accepted connection waits for the client
// to pick it up: a client that vanished between the announcement and the
// pickup must not leave a sandbox's connection open until its listener
// closes.
const pickupWait = 30 * time.Second

// connTable holds the connections the node's listeners accepted until
// the client picks each up by its id.
type connTable struct {
	mu sync.Mutex
	m  map[string]*pending
}

type pending struct {
	c     net.Conn
	owner *int // the listen call that accepted it
	timer *time.Timer
}

// put keeps c under a new unguessable id.
func (t *connTable) put(c net.Conn, owner *int) string {
	id := rand.Text()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[id] = &pending{c: c, owner: owner, timer: time.AfterFunc(pickupWait, func() {
		if c := t.take(id); c != nil {
			c.Close()
		}
	})}
	return id
}

// take hands out connection id once; nil if there is none.
func (t *connTable) take(id string) net.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.m[id]
	if p == nil {
		return nil
	}
	delete(t.m, id)
	p.timer.Stop()
	return p.c
}

// drop closes what owner's listener accepted and nobody picked up.
func (t *connTable) drop(owner *int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, p := range t.m {
		if p.owner == owner {
			delete(t.m, id)
			p.timer.Stop()
			p.c.Close()
		}
	}
}
