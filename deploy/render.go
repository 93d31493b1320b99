package deploy

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
)

// all: keeps templates/_helpers.tpl, which a plain pattern would skip.
//
//go:embed all:helm/airlock
var chartFS embed.FS

const chartDir = "helm/airlock"

// Release and namespace of the plain manifests.
const (
	DefaultRelease   = "airlock"
	DefaultNamespace = "airlock"
)

// KubeVersion is the Kubernetes version a render assumes (helm template's
// --kube-version): the client-go this module pins and the kube-apiserver the
// tests submit to. Fixed, because Helm's default comes from the binary's
// build info, which go test and go run see differently.
const KubeVersion = "v1.37.2"

// ManifestsHeader opens deploy/kubernetes/airlock.yaml.
const ManifestsHeader = `# Airlock on Kubernetes: the Helm chart deploy/helm/airlock rendered with its
# default values (release "airlock", namespace "airlock").
#
# Generated: do not edit. Change the chart, then regenerate from the
# repository's root with
#   go run ./deploy/render > deploy/kubernetes/airlock.yaml
# (go test ./deploy fails while this file differs from the render).
#
# Before applying, create the namespace and the Secret "airlock" that the
# control plane reads (database-url, master-key, optional admin-key), as
# docs/KUBERNETES.md shows; then: kubectl apply -f airlock.yaml
`

// LoadChart loads the embedded chart.
func LoadChart() (*chart.Chart, error) {
	var files []*archive.BufferedFile
	err := fs.WalkDir(chartFS, chartDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := chartFS.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, &archive.BufferedFile{Name: strings.TrimPrefix(path, chartDir+"/"), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read embedded chart: %w", err)
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	return c, nil
}

// Render renders the chart as `helm template` does (client-only, no
// cluster) for release name in namespace ns, with values over the chart's
// defaults, and returns the manifests as one YAML stream.
func Render(name, ns string, values map[string]any) (string, error) {
	c, err := LoadChart()
	if err != nil {
		return "", err
	}
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.Replace = true // no release store to check the name against
	install.ReleaseName = name
	install.Namespace = ns
	kv, err := common.ParseKubeVersion(KubeVersion)
	if err != nil {
		return "", fmt.Errorf("render chart: %w", err)
	}
	install.KubeVersion = kv
	if values == nil {
		values = map[string]any{}
	}
	r, err := install.Run(c, values)
	if err != nil {
		return "", fmt.Errorf("render chart: %w", err)
	}
	rel, ok := r.(*release.Release)
	if !ok {
		return "", fmt.Errorf("render chart: unexpected release type %T", r)
	}
	if len(rel.Hooks) > 0 {
		// The plain manifests could not express a hook's ordering.
		return "", fmt.Errorf("render chart: %d hooks; the chart must have none", len(rel.Hooks))
	}
	return strings.TrimSpace(rel.Manifest) + "\n", nil
}

// Manifests is the content of deploy/kubernetes/airlock.yaml: the header
// and the chart's default render.
func Manifests() (string, error) {
	m, err := Render(DefaultRelease, DefaultNamespace, nil)
	if err != nil {
		return "", err
	}
	return ManifestsHeader + m, nil
}
