//go:build linux

package main

import (
	"bufio"
	"os"
	"strings"
)

// statusFields are the /proc/self/status lines that describe a process's
// privilege: who it is, what capabilities it holds, what it can gain.
var statusFields = map[string]bool{
	"Uid": true, "Gid": true, "Groups": true,
	"CapInh": true, "CapPrm": true, "CapEff": true, "CapBnd": true, "CapAmb": true,
	"NoNewPrivs": true, "Seccomp": true, "Seccomp_filters": true,
}

func probeStatus() {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		emit(map[string]string{"error": err.Error()})
		os.Exit(1)
	}
	defer f.Close()
	got := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && statusFields[k] {
			got[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	if err := sc.Err(); err != nil {
		got["error"] = err.Error()
	}
	emit(got)
}
