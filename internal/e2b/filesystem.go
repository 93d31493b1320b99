package e2b

import (
	"context"
	"errors"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/airlockhq/airlock/client"
)

// home is where relative paths resolve, as in Airlock and E2B alike.
const home = "/home/user"

// absPath resolves p as the sandbox would.
func absPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = home + "/" + p
	}
	return path.Clean(p)
}

// maxListEntries bounds a recursive listing (depth > 1).
const maxListEntries = 10000

// filesystem serves filesystem.Filesystem.
func (h *Handler) filesystem(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	switch method {
	case "Stat", "MakeDir", "Move", "ListDir", "Remove", "CreateWatcher", "GetWatcherEvents", "RemoveWatcher":
	case "WatchDir":
		h.watchDir(w, r)
		return
	default:
		writeUnary(w, nil, rpcErrorf(codeUnimplemented, "filesystem.Filesystem/%s is not supported by Airlock", method))
		return
	}
	c, id, rerr := h.envdCaller(r)
	if rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	ctx := r.Context()
	var out any
	switch method {
	case "CreateWatcher", "GetWatcherEvents", "RemoveWatcher":
		out, rerr = h.watcherCall(r, c, id, method)
	case "Move":
		var req moveRequest
		if rerr = decodeUnary(r, &req); rerr != nil {
			break
		}
		if err := c.Move(ctx, id, absPath(req.Source), absPath(req.Destination)); err != nil {
			rerr = rpcErrorOf(err)
			break
		}
		var e entryInfo
		e, rerr = stat(ctx, c, id, req.Destination)
		out = entryResponse{Entry: &e}
	default:
		var req pathRequest
		if rerr = decodeUnary(r, &req); rerr != nil {
			break
		}
		out, rerr = h.pathCall(ctx, c, id, method, req)
	}
	writeUnary(w, out, rerr)
}

func (h *Handler) pathCall(ctx context.Context, c *client.Client, id, method string, req pathRequest) (any, *rpcError) {
	switch method {
	case "Stat":
		e, rerr := stat(ctx, c, id, req.Path)
		if rerr != nil {
			return nil, rerr
		}
		return entryResponse{Entry: &e}, nil
	case "MakeDir":
		if _, rerr := stat(ctx, c, id, req.Path); rerr == nil {
			return nil, rpcErrorf(codeAlreadyExists, "%s already exists", absPath(req.Path))
		} else if rerr.Code != codeNotFound {
			return nil, rerr
		}
		if err := c.Mkdir(ctx, id, absPath(req.Path), 0o755); err != nil {
			return nil, rpcErrorOf(err)
		}
		e, rerr := stat(ctx, c, id, req.Path)
		if rerr != nil {
			return nil, rerr
		}
		return entryResponse{Entry: &e}, nil
	case "Remove":
		if _, rerr := stat(ctx, c, id, req.Path); rerr != nil {
			return nil, rerr
		}
		if err := c.Remove(ctx, id, absPath(req.Path), true); err != nil {
			return nil, rpcErrorOf(err)
		}
		return struct{}{}, nil
	case "ListDir":
		depth := max(req.Depth, 1)
		out := listDirResponse{Entries: []entryInfo{}}
		if rerr := listDir(ctx, c, id, absPath(req.Path), depth, &out.Entries); rerr != nil {
			return nil, rerr
		}
		return out, nil
	}
	return nil, rpcErrorf(codeUnimplemented, "filesystem.Filesystem/%s is not supported by Airlock", method)
}

func listDir(ctx context.Context, c *client.Client, id, dir string, depth uint32, out *[]entryInfo) *rpcError {
	ents, err := c.ListDir(ctx, id, dir)
	if err != nil {
		if errors.Is(err, client.ErrInvalid) {
			return rpcErrorf(codeInvalidArgument, "%s is not a directory", dir)
		}
		return rpcErrorOf(err)
	}
	for _, e := range ents {
		if len(*out) >= maxListEntries {
			return rpcErrorf(codeResourceExhausted, "listing %s: over %d entries; ask for less depth", dir, maxListEntries)
		}
		ei := entryOf(e, path.Join(dir, e.Name))
		*out = append(*out, ei)
		if e.Type == "dir" && depth > 1 {
			if rerr := listDir(ctx, c, id, ei.Path, depth-1, out); rerr != nil {
				return rerr
			}
		}
	}
	return nil
}

// stat finds p in its parent's listing: the API has no stat of its own.
func stat(ctx context.Context, c *client.Client, id, p string) (entryInfo, *rpcError) {
	abs := absPath(p)
	if abs == "/" {
		// Nothing lists the root itself, but the call must still prove
		// the caller may see the sandbox.
		if _, err := c.ListDir(ctx, id, "/"); err != nil {
			return entryInfo{}, rpcErrorOf(err)
		}
		mode, perm := modeBits("dir", "0755")
		return entryInfo{Name: "/", Type: fileTypeDir, Path: "/", Mode: mode, Permissions: perm, Owner: "root", Group: "root"}, nil
	}
	dir, name := path.Split(abs)
	ents, err := c.ListDir(ctx, id, dir)
	if err != nil {
		if errors.Is(err, client.ErrInvalid) {
			// The parent is a file: nothing is below it.
			return entryInfo{}, rpcErrorf(codeNotFound, "%s does not exist", abs)
		}
		return entryInfo{}, rpcErrorOf(err)
	}
	for _, e := range ents {
		if e.Name == name {
			return entryOf(e, abs), nil
		}
	}
	return entryInfo{}, rpcErrorf(codeNotFound, "%s does not exist", abs)
}

func entryOf(e client.FileEntry, abs string) entryInfo {
	mode, perm := modeBits(e.Type, e.Mode)
	t := fileTypeUnspecified
	switch e.Type {
	case "file":
		t = fileTypeFile
	case "dir":
		t = fileTypeDir
	case "symlink":
		t = fileTypeSymlink
	}
	ei := entryInfo{Name: e.Name, Type: t, Path: abs, Size: e.Size, Mode: mode, Permissions: perm,
		Owner: sandboxUser, Group: sandboxUser}
	if !e.MTime.IsZero() {
		ei.ModifiedTime = e.MTime.UTC().Format(time.RFC3339Nano)
	}
	return ei
}
