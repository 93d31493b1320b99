package sandbox_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/secrets"
)

// testImage is a small image the test builds from the host's dash and
// cat (with their libc): a first layer with /usr/share/old, a setuid
// file and a device node, a second that whites out /usr/share/old.
func testImage(t *testing.T) v1.Image {
	t.Helper()
	type entry struct {
		name, body, link string
		typ              byte
		mode             int64
	}
	host := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Skipf("the test image needs the host's %s: %v", p, err)
		}
		return string(b)
	}
	layer := func(entries ...entry) v1.Layer {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, e := range entries {
			h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, Size: int64(len(e.body))}
			if h.Typeflag == 0 {
				h.Typeflag = tar.TypeReg
			}
			if h.Typeflag != tar.TypeReg {
				h.Size = 0
			}
			if h.Typeflag == tar.TypeChar {
				h.Devmajor, h.Devminor = 1, 3
			}
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			io.WriteString(tw, e.body)
		}
		tw.Close()
		b := buf.Bytes()
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	dir := func(n string) entry { return entry{name: n, typ: tar.TypeDir, mode: 0o755} }
	l1 := layer(dir("usr/"), dir("usr/bin/"), dir("usr/share/"), dir("lib/"), dir("lib/x86_64-linux-gnu/"), dir("lib64/"), dir("etc/"), dir("srv/"), dir("dev/"),
		entry{name: "bin", typ: tar.TypeSymlink, link: "usr/bin", mode: 0o777},
		entry{name: "usr/bin/sh", body: host("/usr/bin/dash"), mode: 0o755},
		entry{name: "usr/bin/cat", body: host("/usr/bin/cat"), mode: 0o755},
		entry{name: "usr/bin/su", body: host("/usr/bin/cat"), mode: 0o4755},
		entry{name: "lib/x86_64-linux-gnu/libc.so.6", body: host("/lib/x86_64-linux-gnu/libc.so.6"), mode: 0o755},
		entry{name: "lib64/ld-linux-x86-64.so.2", body: host("/lib64/ld-linux-x86-64.so.2"), mode: 0o755},
		entry{name: "etc/os-release", body: "ID=testimage\n", mode: 0o644},
		entry{name: "usr/share/old", body: "old\n", mode: 0o644},
		entry{name: "dev/evil", typ: tar.TypeChar, mode: 0o666})
	l2 := layer(dir("usr/share/"), entry{name: "usr/share/.wh.old", mode: 0o644}, entry{name: "etc/motd", body: "layer two\n", mode: 0o644})
	img, err := mutate.AppendLayers(empty.Image, l1, l2)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, v1.Config{Env: []string{"PATH=/usr/bin:/bin", "IMAGE_VAR=from-image"}, WorkingDir: "/srv", User: "root"})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// registryOn serves an in-memory registry on loopback, wrapped by wrap,
// and pushes img to it as repo:latest.
func registryOn(t *testing.T, img v1.Image, wrap func(http.Handler) http.Handler, auth authn.Authenticator) string {
	t.Helper()
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ref, err := name.ParseReference(srv.Listener.Addr().String()+"/test/img:latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(auth)); err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

// TestImageTemplate: an image pulled from a registry through the egress
// proxy's allow-list runs as a template with its own /usr: whiteouts
// applied, setuid bits and device nodes gone, its environment and
// working directory the sandboxes'. A docker save tarball works the same,
// a registry that needs credentials works with a bound secret, and a
// corrupt layer is refused.
func TestImageTemplate(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	box, err := secrets.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	svc, err := sandbox.NewManager(ctx, shared, testRuntime(t), sandbox.Options{Secrets: box, Egress: &egress.Config{AllowPrivate: loopbackOpened}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	c := tenant(t, 0, 0)
	admin := c
	admin.Admin = true
	img := testImage(t)
	ref := registryOn(t, img, nil, authn.Anonymous)

	var mu sync.Mutex
	var progress []runtime.ImageProgress
	tmpl, err := svc.ImportTemplate(ctx, admin, sandbox.ImportTemplateRequest{Name: "img-reg", Image: ref, Insecure: true}, func(p runtime.ImageProgress) {
		mu.Lock()
		progress = append(progress, p)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.DeleteTemplate(ctx, admin, "img-reg")
	done := 0
	for _, p := range progress {
		if p.Done {
			done++
		}
	}
	if done != 2 || tmpl.Image != ref || !strings.HasPrefix(tmpl.Digest, "sha256:") || tmpl.Workdir != "/srv" {
		t.Errorf("import: %+v; %d layers reported done of %d progress calls", tmpl, done, len(progress))
	}
	checkImage := func(template string) {
		t.Helper()
		sb := create(t, svc, c, sandbox.CreateRequest{Template: template})
		res := run(t, svc, c, sb.ID, `cat /etc/os-release /etc/motd; [ -e /usr/share/old ] || echo whited-out; [ -u /usr/bin/su ] || echo no-setuid;
			[ -e /dev/evil ] || echo no-device; [ -e /usr/bin/python3 ] || echo own-usr; echo $IMAGE_VAR; echo $PWD; echo x > /home/user/f && cat /home/user/f`)
		want := "ID=testimage\nlayer two\nwhited-out\nno-setuid\nno-device\nown-usr\nfrom-image\n/srv\nx\n"
		if res.Stdout != want || res.ExitCode != 0 {
			t.Errorf("sandbox on %s: %+v\nwant %q", template, res, want)
		}
	}
	checkImage("img-reg")

	// A docker save tarball.
	file := filepath.Join(t.TempDir(), "img.tar")
	tref, _ := name.ParseReference("test/img:latest")
	if err := tarball.WriteToFile(file, tref, img); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ImportTemplate(ctx, admin, sandbox.ImportTemplateRequest{Name: "img-file", File: file}, nil); err != nil {
		t.Fatal(err)
	}
	defer svc.DeleteTemplate(ctx, admin, "img-file")
	checkImage("img-file")

	// A corrupt layer: one byte of a blob flipped on its way out.
	layers, _ := img.Layers()
	bad, _ := layers[1].Digest()
	flip := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/blobs/"+bad.String()) || r.Method != http.MethodGet {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			b := rec.Body.Bytes()
			b[len(b)/2] ^= 0xff
			w.WriteHeader(rec.Code)
			w.Write(b)
		})
	}
	corrupt := registryOn(t, img, flip, authn.Anonymous)
	_, err = svc.ImportTemplate(ctx, admin, sandbox.ImportTemplateRequest{Name: "img-bad", Image: corrupt, Insecure: true}, nil)
	if !errors.Is(err, sandbox.ErrInvalid) || !strings.Contains(err.Error(), "digest mismatch") {
		t.Errorf("corrupt layer: %v, want an invalid argument naming the digest mismatch", err)
	}
	if svc.HasTemplate(ctx, "img-bad") {
		t.Error("a corrupt image left a template")
	}
	_, err = svc.ImportTemplate(ctx, c, sandbox.ImportTemplateRequest{Name: "img-x", Image: ref, Insecure: true}, nil)
	wantKind(t, "import by a tenant key", err, sandbox.ErrInvalid)
}

// TestImageCredentials: a registry that needs credentials (on the fake
// internet, by name: a secret binds to names, never addresses) is refused
// without them and pulled with a secret bound to its host.
func TestImageCredentials(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	box, err := secrets.NewBox(key)
	if err != nil {
		t.Fatal(err)
	}
	fn := fakenet.Start(t)
	ctx := context.Background()
	svc, err := sandbox.NewManager(ctx, shared, testRuntime(t), sandbox.Options{Secrets: box,
		Egress: &egress.Config{DNS: net.JoinHostPort(fakenet.DNSIP, "53")}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	c := tenant(t, 0, 0)
	admin := c
	admin.Admin = true
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	// Pushed on loopback, pulled from the fake internet: one store.
	registryOn(t, testImage(t), func(http.Handler) http.Handler { return reg }, authn.Anonymous)
	fn.Handle("/v2/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "puller" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	ref := fakenet.AllowedName + "/test/img:latest"
	_, err = svc.ImportTemplate(ctx, admin, sandbox.ImportTemplateRequest{Name: "img-auth", Image: ref, Insecure: true}, nil)
	if !errors.Is(err, sandbox.ErrInvalid) || !strings.Contains(err.Error(), "authentication") {
		t.Errorf("without credentials: %v", err)
	}
	if _, err := svc.CreateSecret(ctx, c, secrets.Spec{Name: "regcred", Value: "puller:s3cret", Hosts: []string{fakenet.AllowedName}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateSecret(ctx, c, secrets.Spec{Name: "other", Value: "puller:s3cret", Hosts: []string{"example.com"}}); err != nil {
		t.Fatal(err)
	}
	_, err = svc.ImportTemplate(ctx, admin, sandbox.ImportTemplateRequest{Name: "img-auth", Image: ref, Insecure: true, Credentials: "other"}, nil)
	wantKind(t, "credentials bound to another host", err, sandbox.ErrInvalid)
	if _, err := svc.ImportTemplate(ctx, admin, sandbox.ImportTemplateRequest{Name: "img-auth", Image: ref, Insecure: true, Credentials: "regcred"}, nil); err != nil {
		t.Fatalf("with credentials: %v", err)
	}
	defer svc.DeleteTemplate(ctx, admin, "img-auth")
	sb := create(t, svc, c, sandbox.CreateRequest{Template: "img-auth"})
	if res := run(t, svc, c, sb.ID, "cat /etc/os-release"); res.Stdout != "ID=testimage\n" {
		t.Errorf("sandbox on the private image: %+v", res)
	}
}

// TestImagePullNeedsTheOperatorsOpening: a registry on loopback is the
// host's own service; without the operator's opening, no pull reaches it.
func TestImagePullNeedsTheOperatorsOpening(t *testing.T) {
	ctx := context.Background()
	svc, err := sandbox.NewManager(ctx, shared, testRuntime(t), sandbox.Options{Egress: &egress.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	admin := tenant(t, 0, 0)
	admin.Admin = true
	ref := registryOn(t, testImage(t), nil, authn.Anonymous)
	_, err = svc.ImportTemplate(ctx, admin, sandbox.ImportTemplateRequest{Name: "img-loop", Image: ref, Insecure: true}, nil)
	if err == nil || svc.HasTemplate(ctx, "img-loop") {
		t.Errorf("pull from loopback without the operator's opening: %v", err)
	}
}
