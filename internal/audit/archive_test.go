package audit

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

func archive(t *testing.T, key ed25519.PrivateKey, events []Event, extra map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	m := Manifest{Sandbox: "sb-1", Tenant: "ten-1", ExportedAt: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}
	err := WriteArchive(&buf, m, key, func(f func(Event) error) error {
		for _, e := range events {
			if err := f(e); err != nil {
				return err
			}
		}
		return nil
	}, extra)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rewrite passes an archive's files through edit (nil drops the file).
func rewrite(t *testing.T, arc []byte, edit func(name string, b []byte) []byte) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(arc))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out bytes.Buffer
	gw := gzip.NewWriter(&out)
	tw := tar.NewWriter(gw)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		b, _ := io.ReadAll(tr)
		if b = edit(hdr.Name, b); b == nil {
			continue
		}
		hdr.Size = int64(len(b))
		tw.WriteHeader(hdr)
		tw.Write(b)
	}
	tw.Close()
	gw.Close()
	return out.Bytes()
}

func TestArchive(t *testing.T) {
	events := chain(t, 6)
	arc := archive(t, nil, events, map[string][]byte{"casts/ex-1.cast": []byte("{\"version\":2}\n")})
	m, res, err := VerifyArchive(bytes.NewReader(arc))
	if err != nil || !res.OK || res.Events != 6 || m.HeadSeq != 6 || m.HeadHash != events[5].Hash || m.Sandbox != "sb-1" {
		t.Fatalf("good archive: %+v %+v %v", m, res, err)
	}
	lines := func(edit func([]string) []string) func(string, []byte) []byte {
		return func(name string, b []byte) []byte {
			if name != "events.jsonl" {
				return b
			}
			l := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			return []byte(strings.Join(edit(l), "\n") + "\n")
		}
	}
	for name, tc := range map[string]struct {
		edit func(string, []byte) []byte
		bad  int64 // 0: not an event's fault
	}{
		"byte flipped": {lines(func(l []string) []string { l[2] = strings.Replace(l[2], `"echo"`, `"echO"`, 1); return l }), 3},
		"deleted":      {lines(func(l []string) []string { return append(l[:3:3], l[4:]...) }), 4},
		"reordered":    {lines(func(l []string) []string { l[1], l[4] = l[4], l[1]; return l }), 2},
		"cut short":    {lines(func(l []string) []string { return l[:4] }), 5},
		"garbage line": {lines(func(l []string) []string { l[0] = "{not json"; return l }), 1},
		"cast changed": {func(name string, b []byte) []byte {
			if name == "casts/ex-1.cast" {
				return []byte("{\"version\":3}\n")
			}
			return b
		}, 0},
		"cast dropped": {func(name string, b []byte) []byte {
			if name == "casts/ex-1.cast" {
				return nil
			}
			return b
		}, 0},
	} {
		_, res, err := VerifyArchive(bytes.NewReader(rewrite(t, arc, tc.edit)))
		if err != nil || res.OK || res.FirstBadSeq != tc.bad {
			t.Errorf("%s: %+v %v, want first bad %d", name, res, err, tc.bad)
		}
	}
	if _, _, err := VerifyArchive(strings.NewReader("not a gzip file")); err == nil {
		t.Error("a file that is no archive verifies")
	}
}

// TestArchiveSigned: a signed export verifies and names its key; one
// rewritten whole (events relinked, hashes and manifest recomputed) no
// longer does.
func TestArchiveSigned(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	events := chain(t, 4)
	arc := archive(t, key, events, nil)
	m, res, err := VerifyArchive(bytes.NewReader(arc))
	if err != nil || !res.OK || m.Signature == nil || m.Signature.Fingerprint != Fingerprint(key.Public().(ed25519.PublicKey)) {
		t.Fatalf("signed archive: %+v %+v %v", m.Signature, res, err)
	}
	// A forger relinks a changed log and rewrites the manifest to match,
	// keeping the old signature (or it would need the key).
	forged := chain(t, 4)
	forged[1].Actor = "someone-else"
	for i := range forged {
		var prev *Event
		if i > 0 {
			prev = &forged[i-1]
		}
		if err := Link(prev, &forged[i]); err != nil {
			t.Fatal(err)
		}
	}
	fake := archive(t, nil, forged, nil)
	_, sigFake, _ := VerifyArchive(bytes.NewReader(fake))
	if !sigFake.OK {
		t.Fatal("the forged chain itself should be consistent")
	}
	var fm Manifest
	rewritten := rewrite(t, fake, func(name string, b []byte) []byte {
		if name != "manifest.json" {
			return b
		}
		json.Unmarshal(b, &fm)
		fm.Signature = m.Signature
		out, _ := json.Marshal(fm)
		return out
	})
	if _, res, err := VerifyArchive(bytes.NewReader(rewritten)); err != nil || res.OK || !strings.Contains(res.Reason, "signature") {
		t.Errorf("forged archive with the old signature: %+v %v", res, err)
	}
}
