// Command render prints deploy/kubernetes/airlock.yaml: the Helm chart in
// deploy/helm/airlock rendered with its default values, client-only.
//
//	go run ./deploy/render > deploy/kubernetes/airlock.yaml
package main

import (
	"fmt"
	"os"

	"github.com/airlockhq/airlock/deploy"
)

func main() {
	m, err := deploy.Manifests()
	if err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
	if _, err := os.Stdout.WriteString(m); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}
