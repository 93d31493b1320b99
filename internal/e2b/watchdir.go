package e2b

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

// watchDir serves filesystem.Filesystem/WatchDir: a start message once the
// first listing is taken, then the events of every poll, keep-alives while
// nothing changes, until the client goes away or its deadline passes.
func (h *Handler) watchDir(w http.ResponseWriter, r *http.Request) {
	c, id, rerr := h.envdCaller(r)
	var req watchRequest
	if rerr == nil {
		// Before the answer begins: HTTP/1 then no longer lets us read.
		rerr = decodeStreamRequest(r, &req)
	}
	s := newStream(w)
	if rerr == nil {
		rerr = h.streamWatch(r, s, c, id, req)
	}
	s.End(rerr)
}

func (h *Handler) streamWatch(r *http.Request, s *stream, c *client.Client, id string, req watchRequest) *rpcError {
	wt := h.newWatcher(r, id, req)
	if rerr := h.watchers.add(wt, time.Now()); rerr != nil {
		return rerr
	}
	defer h.watchers.remove(wt.id, wt.owner)
	ctx := r.Context()
	if d := connectTimeout(r); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if rerr := checkDir(ctx, c, id, wt.dir); rerr != nil {
		return rerr
	}
	if _, rerr := wt.poll(ctx, c); rerr != nil {
		return rerr
	}
	if err := s.Send(watchDirResponse{Start: &struct{}{}}); err != nil {
		return nil
	}
	tick := time.NewTicker(watchPoll)
	defer tick.Stop()
	alive := time.NewTicker(keepAliveEvery(r))
	defer alive.Stop()
	for {
		select {
		case <-ctx.Done():
			if r.Context().Err() != nil {
				return nil // the client went away
			}
			return rpcErrorf(codeDeadlineExceeded, "the watch of %s reached its deadline", wt.dir)
		case <-alive.C:
			if s.Send(watchDirResponse{Keepalive: &struct{}{}}) != nil {
				return nil
			}
		case <-tick.C:
			evs, rerr := wt.poll(ctx, c)
			if rerr != nil {
				if ctx.Err() != nil {
					continue // reported by the Done case
				}
				return rerr
			}
			h.watchers.touch(wt, time.Now())
			for i := range evs {
				if s.Send(watchDirResponse{Filesystem: &evs[i]}) != nil {
					return nil
				}
			}
		}
	}
}

// checkDir fails unless dir is a directory: not_found when it is missing,
// invalid_argument when it is something else, as envd answers.
func checkDir(ctx context.Context, c *client.Client, id, dir string) *rpcError {
	e, rerr := stat(ctx, c, id, dir)
	if rerr != nil {
		return rerr
	}
	if e.Type != fileTypeDir {
		return rpcErrorf(codeInvalidArgument, "%s is not a directory", dir)
	}
	return nil
}

func (h *Handler) newWatcher(r *http.Request, id string, req watchRequest) *watcher {
	return &watcher{sandbox: id, owner: ownerOf(strings.TrimSpace(r.Header.Get("X-Access-Token")), id),
		dir: absPath(req.Path), recursive: req.Recursive, entries: req.IncludeEntry}
}

// watcherCall serves the polling trio: CreateWatcher takes the first
// listing, each GetWatcherEvents lists again and answers what changed
// since the previous call, RemoveWatcher forgets it.
func (h *Handler) watcherCall(r *http.Request, c *client.Client, id, method string) (any, *rpcError) {
	owner := ownerOf(strings.TrimSpace(r.Header.Get("X-Access-Token")), id)
	if method == "CreateWatcher" {
		var req watchRequest
		if rerr := decodeUnary(r, &req); rerr != nil {
			return nil, rerr
		}
		wt := h.newWatcher(r, id, req)
		if rerr := h.watchers.add(wt, time.Now()); rerr != nil {
			return nil, rerr
		}
		rerr := checkDir(r.Context(), c, id, wt.dir)
		if rerr == nil {
			_, rerr = wt.poll(r.Context(), c)
		}
		if rerr != nil {
			h.watchers.remove(wt.id, owner)
			return nil, rerr
		}
		return watcherIDMessage{WatcherID: wt.id}, nil
	}
	var req watcherIDMessage
	if rerr := decodeUnary(r, &req); rerr != nil {
		return nil, rerr
	}
	if method == "RemoveWatcher" {
		if !h.watchers.remove(req.WatcherID, owner) {
			return nil, rpcErrorf(codeNotFound, "no watcher %q", req.WatcherID)
		}
		return struct{}{}, nil
	}
	wt, ok := h.watchers.get(req.WatcherID, owner, time.Now())
	if !ok {
		return nil, rpcErrorf(codeNotFound, "no watcher %q (removed, or idle for over %s)", req.WatcherID, watchIdle)
	}
	evs, rerr := wt.poll(r.Context(), c)
	if rerr != nil {
		return nil, rerr
	}
	if evs == nil {
		evs = []fsEvent{}
	}
	return watcherEventsResponse{Events: evs}, nil
}
