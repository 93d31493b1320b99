package e2b

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/airlockhq/airlock/client"
)

// Bounds of the build table: builds are admin calls, but a loop of them
// must still not grow it without end.
const (
	maxBuilds      = 64               // recorded at once, ended ones included
	maxRunning     = 4                // imports at once
	maxBuildLog    = 1000             // progress entries kept per build
	buildTimeout   = time.Hour        // one import, at most
	keepEndedBuild = time.Hour        // how long an ended build answers its status
	keepWaitingFor = 10 * time.Minute // a build never triggered
)

// buildTable is the facade's builds: their state and log, in memory. Each
// import runs in a goroutine the table owns; Close cancels them and waits.
// A build keeps a hash of the key that asked for it, never the key (which
// only the running import's client holds).
// A build's status is known to the server that runs it only (a second
// replica answers 404), and is lost when it restarts; the template an
// import made stays, in Airlock's own list.
type buildTable struct {
	mu     sync.Mutex
	m      map[string]*build
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type build struct {
	id, template string
	owner        string // ownerOf the key that asked for it
	created      time.Time
	ended        time.Time
	status       string // waiting, building, ready, error
	log          []buildLogEntry
	reason       string
	layers       map[int]bool // layer -> done, as reported
}

// buildLogEntry is E2B's BuildLogEntry.
type buildLogEntry struct {
	Timestamp string `json:"timestamp"`
	Level     string `json:"level"`
	Message   string `json:"message"`
}

// buildInfo is E2B's TemplateBuildInfo.
type buildInfo struct {
	BuildID    string          `json:"buildID"`
	TemplateID string          `json:"templateID"`
	Status     string          `json:"status"`
	LogEntries []buildLogEntry `json:"logEntries"`
	Logs       []string        `json:"logs"`
	Reason     *struct {
		Message string `json:"message"`
	} `json:"reason,omitempty"`
}

func newBuildTable() *buildTable {
	ctx, cancel := context.WithCancel(context.Background())
	return &buildTable{m: map[string]*build{}, ctx: ctx, cancel: cancel}
}

// add records a build waiting for its trigger, after dropping those past
// keeping.
func (t *buildTable) add(template, key string) (*build, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for id, b := range t.m {
		if !b.ended.IsZero() && now.Sub(b.ended) > keepEndedBuild || b.status == "waiting" && now.Sub(b.created) > keepWaitingFor {
			delete(t.m, id)
		}
	}
	if len(t.m) >= maxBuilds {
		return nil, fmt.Errorf("%d template builds are in progress or recently ended: try again later", len(t.m))
	}
	b := &build{id: newBuildID(), template: template, owner: ownerOf(key, "build"), created: now, status: "waiting", layers: map[int]bool{}}
	t.m[b.id] = b
	return b, nil
}

// get finds a build of template for the key that asked for it; anyone
// else's is not found.
func (t *buildTable) get(template, id, key string) (*build, bool) {
	owner := ownerOf(key, "build")
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.m[id]
	if b == nil || b.template != template || subtle.ConstantTimeCompare([]byte(b.owner), []byte(owner)) != 1 {
		return nil, false
	}
	return b, true
}

// refuse ends a waiting build with err; false if it was triggered before.
func (t *buildTable) refuse(b *build, err error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b.status != "waiting" {
		return false
	}
	t.endLocked(b, err)
	return true
}

// Why a build cannot start: it was triggered before, or enough imports
// run already (it stays waiting: the trigger may come again).
var (
	errStarted = errors.New("the build was started already")
	errBusy    = fmt.Errorf("%d template builds are running: try again when one has ended", maxRunning)
)

// start runs the import of a waiting build in the background.
func (t *buildTable) start(b *build, c *client.Client, req client.ImportImageRequest) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b.status != "waiting" {
		return errStarted
	}
	running := 0
	for _, o := range t.m {
		if o.status == "building" {
			running++
		}
	}
	if running >= maxRunning {
		return errBusy
	}
	b.status = "building"
	t.logLocked(b, "info", fmt.Sprintf("importing image %s into template %s", req.Image, req.Name))
	t.wg.Add(1)
	go t.run(b, c, req)
	return nil
}

func (t *buildTable) run(b *build, c *client.Client, req client.ImportImageRequest) {
	defer t.wg.Done()
	ctx, cancel := context.WithTimeout(t.ctx, buildTimeout)
	defer cancel()
	tmpl, err := c.ImportImage(ctx, req, func(p client.ImageProgress) { t.progress(b, p) })
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		slog.Info("e2b: template build failed", "template", b.template, "build", b.id, "err", err)
		t.endLocked(b, err)
		return
	}
	t.logLocked(b, "info", fmt.Sprintf("template %s ready: %s@%s", tmpl.Name, tmpl.Image, tmpl.Digest))
	b.status, b.ended = "ready", time.Now()
}

// progress logs a layer when it starts and when it is done; the bytes in
// between are not entries of their own.
func (t *buildTable) progress(b *build, p client.ImageProgress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(b.log) >= maxBuildLog {
		return
	}
	done, seen := b.layers[p.Layer]
	switch {
	case !seen:
		b.layers[p.Layer] = p.Done
		t.logLocked(b, "info", fmt.Sprintf("layer %d/%d %s: %d bytes", p.Layer, p.Layers, p.Digest, p.Total))
		if p.Done {
			t.logLocked(b, "info", fmt.Sprintf("layer %d/%d done", p.Layer, p.Layers))
		}
	case p.Done && !done:
		b.layers[p.Layer] = true
		t.logLocked(b, "info", fmt.Sprintf("layer %d/%d done", p.Layer, p.Layers))
	}
}

func (t *buildTable) endLocked(b *build, err error) {
	b.status, b.reason, b.ended = "error", err.Error(), time.Now()
	t.logLocked(b, "error", err.Error())
}

func (t *buildTable) logLocked(b *build, level, msg string) {
	b.log = append(b.log, buildLogEntry{Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Level: level, Message: msg})
}

// info is a build's status, with its log from entry offset on.
func (t *buildTable) info(b *build, offset int) buildInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := buildInfo{BuildID: b.id, TemplateID: b.template, Status: b.status, LogEntries: []buildLogEntry{}, Logs: []string{}}
	if offset < len(b.log) {
		out.LogEntries = append(out.LogEntries, b.log[offset:]...)
	}
	if b.status == "error" {
		out.Reason = &struct {
			Message string `json:"message"`
		}{b.reason}
	}
	return out
}

// close cancels the running imports and waits for them to end.
func (t *buildTable) close() {
	t.cancel()
	t.wg.Wait()
}
