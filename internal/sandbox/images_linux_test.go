package sandbox_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egress/fakenet"
	"github.com/airlockhq/airlock/internal/images/imagetest"
	"github.com/airlockhq/airlock/internal/runtime"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/secrets"
)

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
	img := imagetest.Image(t)
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
	registryOn(t, imagetest.Image(t), func(http.Handler) http.Handler { return reg }, authn.Anonymous)
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
	ref := registryOn(t, imagetest.Image(t), nil, authn.Anonymous)
	_, err = svc.ImportTemplate(ctx, admin, sandbox.ImportTemplateRequest{Name: "img-loop", Image: ref, Insecure: true}, nil)
	if err == nil || svc.HasTemplate(ctx, "img-loop") {
		t.Errorf("pull from loopback without the operator's opening: %v", err)
	}
}
