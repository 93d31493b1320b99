package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/internal/testenv"
)

// service is a throwaway server the suite's tests share, started by
// ../shared/tools/pg-env.sh or the repository's tools/kube-env.sh.
type service struct {
	script string // its path
	dir    string
	env    string // the variable the tests read
	from   string // the key of the script's env file that holds its value
}

// startServices starts the suite's PostgreSQL and kube-apiserver unless
// the environment already names them, exports them for the tests and
// returns what stops them. A service that will not start is reported and
// left out: the tests that need it then skip (in CI, fail) and say why.
func startServices() (stop func()) {
	tools := testenv.SharedTools()
	if tools == "" {
		fmt.Fprintln(os.Stderr, "gotest: no ../shared/tools here: the PostgreSQL and Kubernetes tests will not run")
		return func() {}
	}
	pid := os.Getpid()
	all := []service{
		{filepath.Join(tools, "pg-env.sh"), fmt.Sprintf("/tmp/airlock-test-pg-%d", pid), testenv.DatabaseURLEnv, "DATABASE_URL"},
		{testenv.KubeEnvScript(), fmt.Sprintf("/tmp/airlock-test-kube-%d", pid), testenv.KubeconfigEnv, "KUBECONFIG"},
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		started []service
	)
	for _, s := range all {
		if os.Getenv(s.env) != "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command("bash", s.script, "up", s.dir).CombinedOutput()
			if err != nil {
				fmt.Fprintf(os.Stderr, "gotest: %s up %s: %v\n%s", s.script, s.dir, err, out)
				exec.Command("bash", s.script, "down", s.dir).Run()
				return
			}
			v, err := envValue(filepath.Join(s.dir, "env"), s.from)
			if err != nil {
				fmt.Fprintf(os.Stderr, "gotest: %s: %v\n", s.script, err)
				return
			}
			mu.Lock()
			os.Setenv(s.env, v)
			started = append(started, s)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return func() {
		for _, s := range started {
			if out, err := exec.Command("bash", s.script, "down", s.dir).CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "gotest: %s down: %v\n%s", s.script, err, out)
			}
		}
	}
}

// envValue reads key from a KEY=VALUE file.
func envValue(path, key string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k == key {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s has no %s", path, key)
}
