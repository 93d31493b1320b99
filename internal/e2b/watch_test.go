package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/client"
)

func TestDiffSnapshots(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	file := func(size int64, mode string, mtime time.Time) client.FileEntry {
		return client.FileEntry{Type: "file", Size: size, Mode: mode, MTime: mtime}
	}
	dir := client.FileEntry{Type: "dir", Mode: "0755", MTime: t0}
	for _, tc := range []struct {
		name     string
		old, cur snapshot
		want     []fsEvent
	}{
		{name: "nothing changed", old: snapshot{"a": file(1, "0644", t0), "d": dir}, cur: snapshot{"a": file(1, "0644", t0), "d": dir}},
		{name: "created", old: snapshot{}, cur: snapshot{"a": file(0, "0644", t0), "d": dir, "d/b": file(1, "0644", t0)},
			want: []fsEvent{{Name: "a", Type: eventCreate}, {Name: "d", Type: eventCreate}, {Name: "d/b", Type: eventCreate}}},
		{name: "removed", old: snapshot{"a": file(0, "0644", t0), "d": dir}, cur: snapshot{},
			want: []fsEvent{{Name: "a", Type: eventRemove}, {Name: "d", Type: eventRemove}}},
		{name: "written: size", old: snapshot{"a": file(1, "0644", t0)}, cur: snapshot{"a": file(2, "0644", t0)},
			want: []fsEvent{{Name: "a", Type: eventWrite}}},
		{name: "written: same size, later mtime", old: snapshot{"a": file(1, "0644", t0)}, cur: snapshot{"a": file(1, "0644", t0.Add(time.Millisecond))},
			want: []fsEvent{{Name: "a", Type: eventWrite}}},
		{name: "chmod", old: snapshot{"a": file(1, "0644", t0)}, cur: snapshot{"a": file(1, "0600", t0)},
			want: []fsEvent{{Name: "a", Type: eventChmod}}},
		{name: "written and chmod", old: snapshot{"a": file(1, "0644", t0)}, cur: snapshot{"a": file(3, "0755", t0)},
			want: []fsEvent{{Name: "a", Type: eventWrite}, {Name: "a", Type: eventChmod}}},
		{name: "a dir's mtime is not a write", old: snapshot{"d": dir}, cur: snapshot{"d": {Type: "dir", Mode: "0755", MTime: t0.Add(time.Second)}}},
		{name: "file replaced by a dir", old: snapshot{"a": file(1, "0644", t0)}, cur: snapshot{"a": dir},
			want: []fsEvent{{Name: "a", Type: eventRemove}, {Name: "a", Type: eventCreate}}},
		{name: "rename is remove and create", old: snapshot{"old": file(1, "0644", t0)}, cur: snapshot{"new": file(1, "0644", t0)},
			want: []fsEvent{{Name: "new", Type: eventCreate}, {Name: "old", Type: eventRemove}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, diffSnapshots(tc.old, tc.cur)); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
}

func TestWatchTable(t *testing.T) {
	var tab watchTable
	now := time.Now()
	a, b := ownerOf("alt_a", "sb1"), ownerOf("alt_b", "sb1")
	var ids []string
	for range maxWatchersPerOwner {
		w := &watcher{owner: a}
		if rerr := tab.add(w, now); rerr != nil {
			t.Fatal(rerr)
		}
		ids = append(ids, w.id)
	}
	if rerr := tab.add(&watcher{owner: a}, now); rerr == nil || rerr.Code != codeResourceExhausted {
		t.Errorf("watcher %d of one caller: %v, want resource_exhausted", maxWatchersPerOwner+1, rerr)
	}
	if rerr := tab.add(&watcher{owner: b}, now); rerr != nil {
		t.Errorf("another caller's first watcher: %v", rerr)
	}
	if _, ok := tab.get(ids[0], b, now); ok {
		t.Error("another caller got the watcher")
	}
	if tab.remove(ids[0], b) {
		t.Error("another caller removed the watcher")
	}
	if _, ok := tab.get(ids[0], a, now); !ok {
		t.Error("the caller lost its watcher")
	}
	if !tab.remove(ids[0], a) || tab.remove(ids[0], a) {
		t.Error("remove: want true once, then false")
	}
	// Idle: dropped at the next use of the table.
	if _, ok := tab.get(ids[1], a, now.Add(watchIdle+time.Second)); ok {
		t.Error("an idle watcher is still there")
	}
}

// The polling trio over the fake API: events are what changed between
// two polls, named relative to the watched directory.
func TestEnvdWatcherPolling(t *testing.T) {
	e := newEnvd(t)
	upload := func(p, data string) {
		hdr := e.header()
		hdr.Set("Content-Type", "application/octet-stream")
		if resp := e.call("POST", "/envd/files?path="+p, hdr, strings.NewReader(data), nil); resp.StatusCode != 200 {
			t.Fatalf("upload %s: %d", p, resp.StatusCode)
		}
	}
	upload("w/keep.txt", "k")
	upload("w/gone.txt", "g")
	var created watcherIDMessage
	if st := e.unary("filesystem.Filesystem/CreateWatcher", watchRequest{Path: "w", Recursive: true}, &created); st != 200 || created.WatcherID == "" {
		t.Fatalf("CreateWatcher: %d %+v", st, created)
	}
	upload("w/new.txt", "n")
	upload("w/keep.txt", "longer")
	upload("w/sub/deep.txt", "d")
	if st := e.unary("filesystem.Filesystem/Remove", pathRequest{Path: "w/gone.txt"}, nil); st != 200 {
		t.Fatalf("Remove: %d", st)
	}
	var got watcherEventsResponse
	if st := e.unary("filesystem.Filesystem/GetWatcherEvents", created, &got); st != 200 {
		t.Fatalf("GetWatcherEvents: %d", st)
	}
	want := []fsEvent{{Name: "gone.txt", Type: eventRemove}, {Name: "keep.txt", Type: eventWrite}, {Name: "new.txt", Type: eventCreate},
		{Name: "sub", Type: eventCreate}, {Name: "sub/deep.txt", Type: eventCreate}}
	if d := cmp.Diff(want, got.Events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	got = watcherEventsResponse{}
	if e.unary("filesystem.Filesystem/GetWatcherEvents", created, &got); got.Events == nil || len(got.Events) != 0 {
		t.Errorf("second poll without changes: %+v, want []", got.Events)
	}
	if st := e.unary("filesystem.Filesystem/RemoveWatcher", created, nil); st != 200 {
		t.Errorf("RemoveWatcher: %d", st)
	}
	var rerr rpcError
	if st := e.unary("filesystem.Filesystem/GetWatcherEvents", created, &rerr); st != 404 || rerr.Code != codeNotFound {
		t.Errorf("GetWatcherEvents after RemoveWatcher: %d %+v", st, rerr)
	}
	rerr = rpcError{}
	if st := e.unary("filesystem.Filesystem/CreateWatcher", watchRequest{Path: "w/keep.txt"}, &rerr); st != 400 || rerr.Code != codeInvalidArgument {
		t.Errorf("CreateWatcher of a file: %d %+v", st, rerr)
	}
	rerr = rpcError{}
	if st := e.unary("filesystem.Filesystem/CreateWatcher", watchRequest{Path: "nowhere"}, &rerr); st != 404 || rerr.Code != codeNotFound {
		t.Errorf("CreateWatcher of a missing dir: %d %+v", st, rerr)
	}
}

// WatchDir streams a start message, then an event per change.
func TestEnvdWatchDirStream(t *testing.T) {
	e := newEnvd(t)
	hdr := e.header()
	hdr.Set("Content-Type", "application/octet-stream")
	e.call("POST", "/envd/files?path=/tmp/watched/a.txt", hdr, strings.NewReader("a"), nil)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hdr = e.header()
	hdr.Set("Content-Type", "application/connect+json")
	req := mustReq(t, "POST", e.url+"/envd/filesystem.Filesystem/WatchDir", hdr).WithContext(ctx)
	req.Body = io.NopCloser(bytes.NewReader(appendEnvelope(nil, 0, []byte(`{"path":"/tmp/watched","includeEntry":true}`))))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	next := func() (byte, watchDirResponse) {
		t.Helper()
		flags, msg, err := readEnvelope(resp.Body)
		if err != nil {
			t.Fatalf("read frame: %v", err)
		}
		var m watchDirResponse
		if flags&flagEndStream == 0 {
			if err := json.Unmarshal(msg, &m); err != nil {
				t.Fatalf("frame %s: %v", msg, err)
			}
		}
		return flags, m
	}
	if flags, m := next(); flags != 0 || m.Start == nil {
		t.Fatalf("first frame: flags %d, %+v; want the start message", flags, m)
	}
	hdr = e.header()
	hdr.Set("Content-Type", "application/octet-stream")
	e.call("POST", "/envd/files?path=/tmp/watched/b.txt", hdr, strings.NewReader("bb"), nil)
	flags, m := next()
	if flags != 0 || m.Filesystem == nil {
		t.Fatalf("second frame: flags %d, %+v; want an event", flags, m)
	}
	if m.Filesystem.Name != "b.txt" || m.Filesystem.Type != eventCreate || m.Filesystem.Entry == nil ||
		m.Filesystem.Entry.Path != "/tmp/watched/b.txt" || m.Filesystem.Entry.Size != 2 {
		t.Errorf("event %+v, entry %+v; want CREATE of b.txt with its entry", m.Filesystem, m.Filesystem.Entry)
	}
}

// Watching a file fails in the stream's end
// message, as the SDK reads it.
func TestEnvdWatchDirMissing(t *testing.T) {
	e := newEnvd(t)
	hdr := e.header()
	hdr.Set("Content-Type", "application/connect+json")
	req := mustReq(t, "POST", e.url+"/envd/filesystem.Filesystem/WatchDir", hdr)
	req.Body = io.NopCloser(bytes.NewReader(appendEnvelope(nil, 0, []byte(`{"path":"/tmp/watched/a.txt"}`))))
	e.call("POST", "/envd/files?path=/tmp/watched/a.txt", http.Header{"X-Access-Token": {e.token}, "E2b-Sandbox-Id": {e.id}, "Content-Type": {"application/octet-stream"}}, strings.NewReader("a"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	flags, msg, err := readEnvelope(resp.Body)
	if err != nil || flags != flagEndStream || !strings.Contains(string(msg), codeInvalidArgument) {
		t.Errorf("WatchDir of a file: flags %d, %s, %v; want an invalid_argument end", flags, msg, err)
	}
}
