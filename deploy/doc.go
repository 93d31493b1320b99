// Package deploy holds Airlock's Kubernetes deployment (Helm chart, manifests) and its tests.
//
// The chart in helm/airlock is embedded, so Render gives the same output
// whatever the working directory: deploy/render prints the default render
// into deploy/kubernetes/airlock.yaml, and the tests render it with other
// values and submit every object to a real kube-apiserver (server-side
// dry-run). Nothing here talks to a cluster to install: rendering is
// client-only, as `helm template` is.
package deploy
