package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// capture keeps the first and the last parts of a stream of up to limit
// bytes in all: the start says what ran, the end how it failed.
type capture struct {
	head  []byte
	tail  []byte // a ring of tailCap bytes once full
	pos   int    // next write in tail once it is full
	total int64
	limit int
}

func newCapture(limit int) *capture { return &capture{limit: limit} }

func (c *capture) headCap() int { return c.limit * 3 / 4 }
func (c *capture) tailCap() int { return c.limit - c.headCap() }

func (c *capture) write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := c.headCap() - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(c.tail) < c.tailCap() {
			k := min(c.tailCap()-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(c.tail[c.pos:], p)
		c.pos = (c.pos + k) % len(c.tail)
		p = p[k:]
	}
	return n, nil
}

// cut reports whether bytes were left out.
func (c *capture) cut() bool { return c.total > int64(len(c.head)+len(c.tail)) }

func (c *capture) String() string {
	tail := append(append([]byte{}, c.tail[c.pos:]...), c.tail[:c.pos]...)
	if !c.cut() {
		return string(append(c.head, tail...))
	}
	left := c.total - int64(len(c.head)+len(tail))
	return strings.ToValidUTF8(string(c.head), "") + fmt.Sprintf("\n[... %d bytes left out ...]\n", left) + strings.ToValidUTF8(string(tail), "")
}

// progress sends a progress notification for output as it comes, at most
// one per interval, so a chatty command cannot flood the client.
type progress struct {
	ctx     context.Context
	session *mcpsdk.ServerSession
	token   any
	every   time.Duration
	last    time.Time
	bytes   int64
}

// wrap reports what w is given, then passes it on.
func (p *progress) wrap(w func([]byte) (int, error)) func([]byte) (int, error) {
	return func(b []byte) (int, error) {
		p.bytes += int64(len(b))
		if now := time.Now(); now.Sub(p.last) >= p.every && p.session != nil {
			p.last = now
			msg := string(b)
			if len(msg) > 512 {
				msg = "..." + msg[len(msg)-512:]
			}
			// A failed notification must not fail the command: the client
			// may have stopped listening for progress only.
			_ = p.session.NotifyProgress(p.ctx, &mcpsdk.ProgressNotificationParams{ProgressToken: p.token,
				Progress: float64(p.bytes), Message: strings.ToValidUTF8(strings.TrimSpace(msg), "")})
		}
		return w(b)
	}
}
