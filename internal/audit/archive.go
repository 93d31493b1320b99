package audit

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"
)

// ArchiveFormat names the layout of an exported log.
const ArchiveFormat = "airlock-audit/1"

// Manifest describes an exported log: what it holds and where the chain
// ends, and the SHA-256 of every other file in the archive.
type Manifest struct {
	Format     string            `json:"format"`
	Sandbox    string            `json:"sandbox"`
	Tenant     string            `json:"tenant"`
	ExportedAt time.Time         `json:"exported_at"`
	Events     int64             `json:"events"`
	HeadSeq    int64             `json:"head_seq"`
	HeadHash   string            `json:"head_hash"`
	Files      map[string]string `json:"files"` // name -> hex SHA-256
	// Signature is the exporting server's over the rest of the manifest:
	// with it, the archive cannot be rewritten (events and hashes
	// recomputed) without the server's key.
	Signature *Signature `json:"signature,omitempty"`
}

// Signature is an Ed25519 signature of a manifest.
type Signature struct {
	Alg         string `json:"alg"`        // "ed25519"
	PublicKey   string `json:"public_key"` // base64
	Fingerprint string `json:"fingerprint"`
	Value       string `json:"value"` // base64, over the manifest's JSON without signature
}

// Fingerprint names a public key: "SHA256:" and the base64 of its hash.
func Fingerprint(pub ed25519.PublicKey) string {
	h := sha256.Sum256(pub)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(h[:])
}

// signed is what a manifest's signature covers.
func (m Manifest) signed() ([]byte, error) {
	m.Signature = nil
	return json.Marshal(m)
}

// Archive limits: an archive is read whole into memory only for its
// small files; events are streamed.
const (
	maxManifest = 1 << 20
	maxLine     = 64 << 20
)

// WriteArchive writes a gzipped tar of manifest.json, events.jsonl and the
// extra files (casts: name -> contents, names relative like
// "casts/ex-1.cast"). events is called once and must send the whole log in
// order; m's Events, HeadSeq, HeadHash and Files are filled in here, and
// its Signature when key is set.
func WriteArchive(w io.Writer, m Manifest, key ed25519.PrivateKey, events func(func(Event) error) error, extra map[string][]byte) error {
	// events.jsonl is built first (in memory, compressed later): the
	// manifest, which comes first in the archive, holds its hash.
	var ev bytes.Buffer
	enc := json.NewEncoder(&ev)
	err := events(func(e Event) error {
		m.Events++
		m.HeadSeq, m.HeadHash = e.Seq, e.Hash
		return enc.Encode(e)
	})
	if err != nil {
		return err
	}
	m.Format = ArchiveFormat
	m.Files = map[string]string{"events.jsonl": sum(ev.Bytes())}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range extra {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		if !validName(name) {
			return fmt.Errorf("audit archive: bad file name %q", name)
		}
		m.Files[name] = sum(extra[name])
	}
	if key != nil {
		msg, err := m.signed()
		if err != nil {
			return err
		}
		pub := key.Public().(ed25519.PublicKey)
		m.Signature = &Signature{Alg: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(pub),
			Fingerprint: Fingerprint(pub), Value: base64.StdEncoding.EncodeToString(ed25519.Sign(key, msg))}
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	add := func(name string, b []byte) error {
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: m.ExportedAt, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := add("manifest.json", append(mb, '\n')); err != nil {
		return err
	}
	if err := add("events.jsonl", ev.Bytes()); err != nil {
		return err
	}
	for _, name := range names {
		if err := add(name, extra[name]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func validName(name string) bool {
	return name != "" && name != "manifest.json" && name != "events.jsonl" && !strings.HasPrefix(name, "/") &&
		path.Clean(name) == name && !strings.HasPrefix(name, "../") && name != ".."
}

// verifySignature checks a signed manifest (an unsigned one passes: the
// caller says whether it must be signed, and by whom).
func (m Manifest) verifySignature() error {
	sig := m.Signature
	if sig == nil {
		return nil
	}
	pub, err1 := base64.StdEncoding.DecodeString(sig.PublicKey)
	val, err2 := base64.StdEncoding.DecodeString(sig.Value)
	msg, err3 := m.signed()
	switch {
	case sig.Alg != "ed25519" || err1 != nil || err2 != nil || err3 != nil || len(pub) != ed25519.PublicKeySize:
		return errors.New("the manifest's signature is malformed")
	case sig.Fingerprint != Fingerprint(pub):
		return errors.New("the manifest's signature names another key than it carries")
	case !ed25519.Verify(pub, msg, val):
		return errors.New("the manifest's signature does not verify: the archive was changed after export")
	}
	return nil
}

// VerifyArchive checks an exported log: every event against the chain,
// the chain's end against the manifest's head, and every file against the
// manifest's hash. It returns the manifest as read and the result; err is
// for an archive that cannot be read at all.
func VerifyArchive(r io.Reader) (Manifest, Result, error) {
	var m Manifest
	gz, err := gzip.NewReader(r)
	if err != nil {
		return m, Result{}, fmt.Errorf("audit archive: %w", err)
	}
	tr := tar.NewReader(gz)
	var v Verifier
	seen := map[string]bool{}
	var fileErr string
	for i := 0; ; i++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return m, Result{}, fmt.Errorf("audit archive: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return m, Result{}, fmt.Errorf("audit archive: %s is not a regular file", hdr.Name)
		}
		if i == 0 {
			if hdr.Name != "manifest.json" {
				return m, Result{}, fmt.Errorf("audit archive: the first file is %s, want manifest.json", hdr.Name)
			}
			if err := json.NewDecoder(io.LimitReader(tr, maxManifest)).Decode(&m); err != nil {
				return m, Result{}, fmt.Errorf("audit archive: manifest.json: %w", err)
			}
			if m.Format != ArchiveFormat {
				return m, Result{}, fmt.Errorf("audit archive: format %q, want %q", m.Format, ArchiveFormat)
			}
			continue
		}
		want, ok := m.Files[hdr.Name]
		if !ok || seen[hdr.Name] {
			fileErr = fmt.Sprintf("%s is not listed in the manifest (or appears twice)", hdr.Name)
			continue
		}
		seen[hdr.Name] = true
		h := sha256.New()
		var body io.Reader = io.TeeReader(tr, h)
		if hdr.Name == "events.jsonl" {
			sc := bufio.NewScanner(body)
			sc.Buffer(make([]byte, 64<<10), maxLine)
			for sc.Scan() {
				var e Event
				if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
					// Unreadable: it fits nowhere in the chain.
					e = Event{Seq: -1}
				}
				v.Add(e)
			}
			if err := sc.Err(); err != nil {
				return m, Result{}, fmt.Errorf("audit archive: events.jsonl: %w", err)
			}
		}
		io.Copy(io.Discard, body)
		if got := hex.EncodeToString(h.Sum(nil)); got != want && fileErr == "" {
			fileErr = fmt.Sprintf("%s does not match its hash in the manifest", hdr.Name)
		}
	}
	for name := range m.Files {
		if !seen[name] && fileErr == "" {
			fileErr = fmt.Sprintf("%s is missing", name)
		}
	}
	v.Head(m.HeadSeq, m.HeadHash)
	res := v.Result()
	if err := m.verifySignature(); err != nil && fileErr == "" {
		fileErr = err.Error()
	}
	if res.OK && fileErr != "" {
		// The events fit their chain but the archive was changed around
		// them: no event is to blame.
		res.OK, res.Reason = false, fileErr
	}
	return m, res, nil
}
