package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
)

// custom is the non-default set of values the tests render: what an
// operator who brings their own Secret, Prometheus Operator and hosts sets.
func custom() map[string]any {
	return map[string]any{
		"image":          map[string]any{"tag": "v9.9.9"},
		"existingSecret": "airlock-prod",
		"controlPlane": map[string]any{
			"replicas": 3,
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "500m", "memory": "256Mi"},
				"limits":   map[string]any{"memory": "1Gi"},
			},
		},
		"node": map[string]any{
			"nodeSelector": map[string]any{"airlock.dev/sandboxes": "true"},
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "1", "memory": "1Gi"},
			},
			"terminationGracePeriodSeconds": 300,
			"drainWait":                     "280s",
		},
		"serviceMonitor": map[string]any{"enabled": true},
		"networkPolicy":  map[string]any{"enabled": false},
		"egress":         map[string]any{"dns": "10.0.0.10:53", "allowPrivate": []any{"10.20.0.0/16", "192.168.7.0/24"}},
	}
}

// rendered is one render split into objects, by "Kind/name".
type rendered map[string]*unstructured.Unstructured

func render(t *testing.T, ns string, values map[string]any) rendered {
	t.Helper()
	m, err := Render(DefaultRelease, ns, values)
	if err != nil {
		t.Fatalf("render chart with %v: %v", values, err)
	}
	objs, err := decode(m)
	if err != nil {
		t.Fatalf("the chart rendered YAML that does not decode: %v\n%s", err, m)
	}
	out := rendered{}
	for _, o := range objs {
		k := o.GetKind() + "/" + o.GetName()
		if out[k] != nil {
			t.Fatalf("the chart renders %s twice", k)
		}
		out[k] = o
	}
	return out
}

// decode splits a YAML stream into objects, skipping empty documents.
func decode(stream string) ([]*unstructured.Unstructured, error) {
	d := k8syaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	var objs []*unstructured.Unstructured
	for {
		var raw runtime.RawExtension
		if err := d.Decode(&raw); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 || string(raw.Raw) == "null" {
			continue
		}
		// Unstructured's own JSON decoding keeps integers int64, as the
		// apiserver's does.
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(raw.Raw); err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
}

func (r rendered) kinds() []string {
	var ks []string
	for k := range r {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (r rendered) get(t *testing.T, key string) *unstructured.Unstructured {
	t.Helper()
	o := r[key]
	if o == nil {
		t.Fatalf("the render has no %s; it has %v", key, r.kinds())
	}
	return o
}

// field reads a nested field, failing t with the path when it is missing.
func field(t *testing.T, o *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if err != nil || !ok {
		t.Fatalf("%s/%s has no %s (err %v)", o.GetKind(), o.GetName(), strings.Join(path, "."), err)
	}
	return v
}

// container returns the pod template's only container.
func container(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs := field(t, o, "spec", "template", "spec", "containers").([]any)
	if len(cs) != 1 {
		t.Fatalf("%s/%s has %d containers, want 1", o.GetKind(), o.GetName(), len(cs))
	}
	return cs[0].(map[string]any)
}

func sub(m map[string]any, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	return v
}

func TestDefaultRenderObjects(t *testing.T) {
	r := render(t, DefaultNamespace, nil)
	want := []string{
		"DaemonSet/airlock-node",
		"Deployment/airlock-control-plane",
		"NetworkPolicy/airlock-control-plane",
		"NetworkPolicy/airlock-node",
		"PodDisruptionBudget/airlock-control-plane",
		"Role/airlock-control-plane",
		"Role/airlock-node",
		"RoleBinding/airlock-control-plane",
		"RoleBinding/airlock-node",
		"Service/airlock",
		"ServiceAccount/airlock-control-plane",
		"ServiceAccount/airlock-node",
	}
	if d := cmp.Diff(want, r.kinds()); d != "" {
		t.Errorf("default render's objects (-want +got); no Secret (the operator creates \"airlock\"), no ServiceMonitor (off by default), no cluster-scoped object:\n%s", d)
	}
	for k, o := range r {
		if o.GetNamespace() != DefaultNamespace {
			t.Errorf("%s is in namespace %q, want the release namespace %q", k, o.GetNamespace(), DefaultNamespace)
		}
	}
}

func TestControlPlaneDeployment(t *testing.T) {
	d := render(t, DefaultNamespace, nil).get(t, "Deployment/airlock-control-plane")
	if got := field(t, d, "spec", "replicas"); got != int64(2) {
		t.Errorf("control plane replicas = %v, want 2 by default", got)
	}
	c := container(t, d)
	wantCmd := []any{"/airlock", "serve", "--addr", "0.0.0.0:7070", "--data-dir", "/var/lib/airlock",
		"--no-local-node", "--kubernetes", "--namespace", "$(POD_NAMESPACE)", "--advertise-url", "http://$(POD_IP):7070"}
	if diff := cmp.Diff(wantCmd, c["command"]); diff != "" {
		t.Errorf("control plane command (-want +got):\n%s", diff)
	}
	for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		if got := sub(c, probe, "httpGet", "path"); got != path {
			t.Errorf("control plane %s path = %v, want %s", probe, got, path)
		}
		if got := sub(c, probe, "httpGet", "port"); got != "http" {
			t.Errorf("control plane %s port = %v, want the named port http (7070)", probe, got)
		}
	}
	if got := sub(c, "ports"); !cmp.Equal(got, []any{map[string]any{"name": "http", "containerPort": int64(7070), "protocol": "TCP"}}) {
		t.Errorf("control plane ports = %v, want http 7070", got)
	}
	env := envByName(c)
	for _, e := range []struct{ name, path string }{{"POD_IP", "status.podIP"}, {"POD_NAMESPACE", "metadata.namespace"}} {
		if got := sub(env[e.name], "valueFrom", "fieldRef", "fieldPath"); got != e.path {
			t.Errorf("control plane env %s from %v, want the downward API's %s", e.name, got, e.path)
		}
	}
	for name, key := range map[string]string{"AIRLOCK_DATABASE_URL": "database-url", "AIRLOCK_MASTER_KEY": "master-key", "AIRLOCK_ADMIN_KEY": "admin-key"} {
		ref, _ := sub(env[name], "valueFrom", "secretKeyRef").(map[string]any)
		if ref["name"] != "airlock" || ref["key"] != key {
			t.Errorf("control plane env %s from secret %v key %v, want Secret airlock key %s", name, ref["name"], ref["key"], key)
		}
		if opt, _ := ref["optional"].(bool); opt != (name == "AIRLOCK_ADMIN_KEY") {
			t.Errorf("control plane env %s optional = %v; only the admin key may be missing", name, opt)
		}
	}
	sc, _ := c["securityContext"].(map[string]any)
	if sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false || sc["privileged"] == true {
		t.Errorf("control plane container securityContext = %v, want a read-only root fs and no privilege", sc)
	}
	if got := field(t, d, "spec", "template", "spec", "securityContext", "runAsNonRoot"); got != true {
		t.Errorf("control plane runAsNonRoot = %v, want true", got)
	}
	if got := volumeSources(t, d)["data"]; !cmp.Equal(got, map[string]any{"emptyDir": map[string]any{}}) {
		t.Errorf("control plane data volume = %v, want an emptyDir (its state is in PostgreSQL)", got)
	}
	if got := field(t, d, "spec", "template", "metadata", "annotations", "prometheus.io/scrape"); got != "true" {
		t.Errorf("control plane pods' prometheus.io/scrape = %v, want \"true\" while the ServiceMonitor is off", got)
	}
}

func TestNodeDaemonSet(t *testing.T) {
	ds := render(t, DefaultNamespace, nil).get(t, "DaemonSet/airlock-node")
	c := container(t, ds)
	wantCmd := []any{"/airlock", "node", "--kubernetes", "--namespace", "$(POD_NAMESPACE)", "--name", "$(NODE_NAME)",
		"--addr", "$(POD_IP):7071", "--data-dir", "/var/lib/airlock-node", "--host-root", "/host"}
	if diff := cmp.Diff(wantCmd, c["command"]); diff != "" {
		t.Errorf("node command (-want +got):\n%s", diff)
	}
	if got := sub(envByName(c)["NODE_NAME"], "valueFrom", "fieldRef", "fieldPath"); got != "spec.nodeName" {
		t.Errorf("node env NODE_NAME from %v, want spec.nodeName", got)
	}
	if got := sub(c, "securityContext", "privileged"); got != true {
		t.Errorf("node container privileged = %v, want true (it creates namespaces, idmapped mounts, cgroups)", got)
	}
	// No $(VAR) in the hook: the kubelet passes it unexpanded; drain reads
	// $POD_NAMESPACE and $NODE_NAME from the container's environment.
	wantStop := []any{"/airlock", "node", "drain", "--kubernetes", "--wait", "100s"}
	if diff := cmp.Diff(wantStop, sub(c, "lifecycle", "preStop", "exec", "command")); diff != "" {
		t.Errorf("node preStop hook (-want +got):\n%s", diff)
	}
	if got := field(t, ds, "spec", "template", "spec", "terminationGracePeriodSeconds"); got != int64(120) {
		t.Errorf("node terminationGracePeriodSeconds = %v, want 120 (above the drain's 100s wait)", got)
	}
	pod := field(t, ds, "spec", "template", "spec").(map[string]any)
	if pod["hostPID"] != false || pod["hostNetwork"] != false {
		t.Errorf("node hostPID = %v, hostNetwork = %v; want both false", pod["hostPID"], pod["hostNetwork"])
	}
	vols := volumeSources(t, ds)
	mounts := map[string]map[string]any{}
	for _, m := range c["volumeMounts"].([]any) {
		m := m.(map[string]any)
		mounts[m["mountPath"].(string)] = m
	}
	for _, w := range []struct {
		host, in, typ string
		readOnly      bool
	}{
		{"/var/lib/airlock-node", "/var/lib/airlock-node", "DirectoryOrCreate", false},
		{"/sys/fs/cgroup", "/sys/fs/cgroup", "Directory", false},
		{"/", "/host", "Directory", true},
		{"/run/airlock", "/run/airlock", "DirectoryOrCreate", false},
	} {
		m := mounts[w.in]
		if m == nil {
			t.Errorf("node has no mount at %s (host %s)", w.in, w.host)
			continue
		}
		hp, _ := vols[m["name"].(string)]["hostPath"].(map[string]any)
		if hp["path"] != w.host || hp["type"] != w.typ {
			t.Errorf("node mount %s is %v, want hostPath %s of type %s", w.in, vols[m["name"].(string)], w.host, w.typ)
		}
		if ro, _ := m["readOnly"].(bool); ro != w.readOnly {
			t.Errorf("node mount %s readOnly = %v, want %v", w.in, ro, w.readOnly)
		}
	}
}

// TestRBAC pins least privilege: Roles in the release namespace, leases and
// named Secrets only, never a ClusterRole.
func TestRBAC(t *testing.T) {
	for name, values := range map[string]map[string]any{"default": nil, "custom": custom()} {
		r := render(t, DefaultNamespace, values)
		for _, k := range r.kinds() {
			if strings.HasPrefix(k, "ClusterRole") {
				t.Errorf("%s render has %s: the chart must grant nothing cluster-wide", name, k)
			}
		}
		want := map[string][]any{
			"Role/airlock-control-plane": {
				map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"}, "verbs": []any{"get", "list", "watch", "create", "update", "patch", "delete"}},
				map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "resourceNames": []any{"airlock-cp-ca", "airlock-node-ca"}, "verbs": []any{"get"}},
				map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"create"}},
			},
			"Role/airlock-node": {
				map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"}, "verbs": []any{"get", "list", "watch", "create", "update", "patch"}},
				map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "resourceNames": []any{"airlock-node-ca"}, "verbs": []any{"get"}},
			},
		}
		for k, rules := range want {
			if d := cmp.Diff(rules, field(t, r.get(t, k), "rules")); d != "" {
				t.Errorf("%s render: %s rules (-want +got):\n%s", name, k, d)
			}
		}
		for _, b := range []string{"airlock-control-plane", "airlock-node"} {
			rb := r.get(t, "RoleBinding/"+b)
			if got := field(t, rb, "roleRef"); !cmp.Equal(got, map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": b}) {
				t.Errorf("%s render: RoleBinding/%s binds %v, want Role %s", name, b, got, b)
			}
			want := []any{map[string]any{"kind": "ServiceAccount", "name": b, "namespace": DefaultNamespace}}
			if d := cmp.Diff(want, field(t, rb, "subjects")); d != "" {
				t.Errorf("%s render: RoleBinding/%s subjects (-want +got):\n%s", name, b, d)
			}
		}
	}
}

func TestCustomRender(t *testing.T) {
	r := render(t, DefaultNamespace, custom())
	for _, k := range []string{"NetworkPolicy/airlock-node", "NetworkPolicy/airlock-control-plane", "Secret/airlock"} {
		if r[k] != nil {
			t.Errorf("custom render has %s; networkPolicy is off and existingSecret is set", k)
		}
	}
	sm := r.get(t, "ServiceMonitor/airlock")
	ep := field(t, sm, "spec", "endpoints").([]any)[0].(map[string]any)
	if ep["path"] != "/metrics" || ep["port"] != "http" {
		t.Errorf("ServiceMonitor scrapes %v:%v, want /metrics on port http", ep["port"], ep["path"])
	}
	if got := sub(ep, "authorization", "credentials"); !cmp.Equal(got, map[string]any{"name": "airlock-prod", "key": "admin-key"}) {
		t.Errorf("ServiceMonitor bearer token from %v, want the existing Secret airlock-prod's admin-key", got)
	}
	d := r.get(t, "Deployment/airlock-control-plane")
	if got := field(t, d, "spec", "replicas"); got != int64(3) {
		t.Errorf("control plane replicas = %v, want 3", got)
	}
	if _, ok, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", "prometheus.io/scrape"); ok {
		t.Errorf("control plane pods carry prometheus.io/scrape while the ServiceMonitor is on: Prometheus would scrape twice")
	}
	c := container(t, d)
	if c["image"] != "ghcr.io/airlockhq/airlock:v9.9.9" {
		t.Errorf("control plane image = %v, want tag v9.9.9", c["image"])
	}
	if got := sub(envByName(c)["AIRLOCK_MASTER_KEY"], "valueFrom", "secretKeyRef", "name"); got != "airlock-prod" {
		t.Errorf("control plane master key from Secret %v, want existingSecret airlock-prod", got)
	}
	if got := sub(c, "resources", "limits", "memory"); got != "1Gi" {
		t.Errorf("control plane memory limit = %v, want 1Gi", got)
	}
	// The egress flags, the same for the control plane, which checks
	// policies against them, and the nodes, whose proxies use them.
	wantEgress := []any{"--egress-dns", "10.0.0.10:53", "--egress-allow-private", "10.20.0.0/16", "--egress-allow-private", "192.168.7.0/24"}
	if cmd := c["command"].([]any); !cmp.Equal(cmd[len(cmd)-len(wantEgress):], wantEgress) {
		t.Errorf("control plane command %v, want it to end with %v", cmd, wantEgress)
	}
	ds := r.get(t, "DaemonSet/airlock-node")
	if cmd := container(t, ds)["command"].([]any); !cmp.Equal(cmd[len(cmd)-len(wantEgress):], wantEgress) {
		t.Errorf("node command %v, want it to end with %v", cmd, wantEgress)
	}
	if got := field(t, ds, "spec", "template", "spec", "nodeSelector"); !cmp.Equal(got, map[string]any{"airlock.dev/sandboxes": "true"}) {
		t.Errorf("node nodeSelector = %v, want airlock.dev/sandboxes=true", got)
	}
	nc := container(t, ds)
	if got := sub(nc, "resources", "requests", "memory"); got != "1Gi" {
		t.Errorf("node memory request = %v, want 1Gi", got)
	}
	if got := sub(nc, "lifecycle", "preStop", "exec", "command").([]any); got[len(got)-1] != "280s" {
		t.Errorf("node preStop waits %v, want drainWait 280s", got[len(got)-1])
	}
	if got := field(t, ds, "spec", "template", "spec", "terminationGracePeriodSeconds"); got != int64(300) {
		t.Errorf("node terminationGracePeriodSeconds = %v, want 300", got)
	}
}

// TestChartSecret: with no existingSecret the chart makes the Secret from
// values, and refuses to render without the keys rather than invent one.
func TestChartSecret(t *testing.T) {
	_, err := Render(DefaultRelease, DefaultNamespace, map[string]any{"existingSecret": ""})
	if err == nil || !strings.Contains(err.Error(), "secret.databaseURL is required") {
		t.Errorf("render with no existingSecret and no keys: err = %v, want a refusal naming secret.databaseURL", err)
	}
	r := render(t, DefaultNamespace, chartSecretValues())
	s := r.get(t, "Secret/airlock")
	want := map[string]any{"database-url": "postgres://airlock@db:5432/airlock", "master-key": strings.Repeat("ab", 32), "admin-key": "alk_test"}
	if d := cmp.Diff(want, field(t, s, "stringData")); d != "" {
		t.Errorf("chart-made Secret data (-want +got):\n%s", d)
	}
	if got := field(t, r.get(t, "Deployment/airlock-control-plane"), "spec", "template", "metadata", "annotations"); sub(got.(map[string]any), "checksum/secret") == nil {
		t.Errorf("control plane pods have no checksum/secret annotation: a changed Secret would not restart them")
	}
}

func chartSecretValues() map[string]any {
	return map[string]any{
		"existingSecret": "",
		"secret": map[string]any{
			"databaseURL": "postgres://airlock@db:5432/airlock",
			"masterKey":   strings.Repeat("ab", 32),
			"adminKey":    "alk_test",
		},
	}
}

// TestPlainManifestsUpToDate keeps deploy/kubernetes/airlock.yaml the
// chart's default render, byte for byte.
func TestPlainManifestsUpToDate(t *testing.T) {
	want, err := Manifests()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("kubernetes/airlock.yaml")
	if err != nil {
		t.Fatalf("read the plain manifests: %v; generate them: go run ./deploy/render > deploy/kubernetes/airlock.yaml", err)
	}
	if !bytes.Equal(got, []byte(want)) {
		t.Errorf("deploy/kubernetes/airlock.yaml is not the chart's default render; regenerate it from the repository root:\n"+
			"  go run ./deploy/render > deploy/kubernetes/airlock.yaml\n(-file +render):\n%s", cmp.Diff(string(got), want))
	}
}

func envByName(c map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, e := range sub(c, "env").([]any) {
		e := e.(map[string]any)
		out[e["name"].(string)] = e
	}
	return out
}

func volumeSources(t *testing.T, o *unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, v := range field(t, o, "spec", "template", "spec", "volumes").([]any) {
		v := v.(map[string]any)
		out[v["name"].(string)] = v
		delete(v, "name")
	}
	return out
}
