package deploy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/airlockhq/airlock/internal/testenv"
)

var (
	namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	crds       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// TestServerDryRun submits every object of the default render, the
// custom one and the one with a chart-made Secret to a real kube-apiserver
// (server-side dry-run: validated, admitted, defaulted, never stored) in a
// namespace of the test's own. The apiserver has no kubelet, controllers or
// default ServiceAccount; a dry-run needs none of them.
func TestServerDryRun(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", testenv.Kubeconfig(t))
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	// A warning (a deprecated API or field, a value the apiserver will
	// change) is a defect a user would see on every apply.
	warnings := &warningRecorder{}
	cfg.WarningHandler = warnings
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	ns := testenv.NewNamespaceName("airlock-deploy")
	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := dyn.Resource(namespaces).Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		// Nothing collects namespaces on the suite's apiserver: its objects
		// stay until etcd goes, but none were stored (dry-run).
		if err := dyn.Resource(namespaces).Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
			t.Logf("delete namespace %s: %v", ns, err)
		}
	})
	installServiceMonitorCRD(ctx, t, dyn)

	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	privilegedRefused := false
	for name, values := range map[string]map[string]any{"default": nil, "custom": custom(), "chart-made secret": chartSecretValues()} {
		t.Run(name, func(t *testing.T) {
			m, err := Render(DefaultRelease, ns, values)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			objs, err := decode(m)
			if err != nil {
				t.Fatalf("decode render: %v", err)
			}
			for _, o := range objs {
				err := dryRunCreate(ctx, dyn, mapper, ns, o)
				if err != nil && refusesPrivilegedOnly(err) {
					// The apiserver runs without --allow-privileged=true
					// (its default): check everything else in the object.
					privilegedRefused = true
					err = dryRunCreate(ctx, dyn, mapper, ns, unprivileged(t, o))
				}
				if err != nil {
					t.Errorf("the apiserver refuses %s %s/%s: %v", o.GetAPIVersion(), o.GetKind(), o.GetName(), err)
				}
			}
		})
	}
	for _, w := range warnings.all() {
		t.Errorf("the apiserver warns about a rendered object: %s", w)
	}
	if privilegedRefused {
		testenv.Lacking(t, "the apiserver refuses privileged containers (kube-apiserver without --allow-privileged=true, "+
			"which every cluster that runs privileged DaemonSets sets): the node DaemonSet was checked without privilege; "+
			"start the test apiserver with --allow-privileged=true")
	}
}

// refusesPrivilegedOnly says whether err is the apiserver refusing a
// privileged container by its own policy (--allow-privileged=false) and
// for nothing else.
func refusesPrivilegedOnly(err error) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsInvalid(err) || status.Status().Details == nil {
		return false
	}
	causes := status.Status().Details.Causes
	for _, c := range causes {
		if !strings.HasSuffix(c.Field, "securityContext.privileged") || !strings.Contains(c.Message, "disallowed by cluster policy") {
			return false
		}
	}
	return len(causes) > 0
}

// unprivileged is o with its containers unprivileged and, as only a
// privileged container may have them, no Bidirectional mounts.
func unprivileged(t *testing.T, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	u := o.DeepCopy()
	cs, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if err != nil {
		t.Fatalf("%s/%s containers: %v", o.GetKind(), o.GetName(), err)
	}
	for _, c := range cs {
		c := c.(map[string]any)
		if sc, ok := c["securityContext"].(map[string]any); ok {
			delete(sc, "privileged")
		}
		ms, _ := c["volumeMounts"].([]any)
		for _, m := range ms {
			delete(m.(map[string]any), "mountPropagation")
		}
	}
	if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	return u
}

func dryRunCreate(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, ns string, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("no API serves it: %w", err)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.GetNamespace() != ns {
			return fmt.Errorf("rendered into namespace %q, not the release namespace %q", o.GetNamespace(), ns)
		}
		ri = dyn.Resource(mapping.Resource).Namespace(ns)
	}
	_, err = ri.Create(ctx, o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
	return err
}

// installServiceMonitorCRD makes the apiserver serve ServiceMonitors (from
// testdata) unless it already does, and removes the CRD after the test
// only if it made it.
func installServiceMonitorCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	raw, err := os.ReadFile("testdata/servicemonitor-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(string(raw))
	if err != nil || len(objs) != 1 {
		t.Fatalf("testdata/servicemonitor-crd.yaml: %d objects, err %v; want one CRD", len(objs), err)
	}
	crd := objs[0]
	switch _, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); {
	case apierrors.IsAlreadyExists(err):
		t.Logf("CRD %s already exists; using it", crd.GetName())
	case err != nil:
		t.Fatalf("create CRD %s: %v", crd.GetName(), err)
	default:
		t.Cleanup(func() {
			if err := dyn.Resource(crds).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Logf("delete CRD %s: %v", crd.GetName(), err)
			}
		})
	}
	for {
		got, err := dyn.Resource(crds).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get CRD %s: %v", crd.GetName(), err)
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			c, _ := c.(map[string]any)
			if c["type"] == "Established" && c["status"] == "True" {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("CRD %s not established: %v (conditions %v)", crd.GetName(), ctx.Err(), conds)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type warningRecorder struct {
	mu sync.Mutex
	ws []string
}

func (r *warningRecorder) HandleWarningHeader(code int, agent, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ws = append(r.ws, message)
}

func (r *warningRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ws)
}
