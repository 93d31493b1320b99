package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/client"
	"github.com/airlockhq/airlock/internal/runtime/linux"
)

// benchDensity keeps n idle sandboxes of an in-process daemon (created
// through its API, 8 at a time) and reports the host memory each costs,
// the daemon's, and exec true among them; then destroys them all and
// checks that nothing of them is left.
func benchDensity(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench density", flag.ContinueOnError)
	n := fs.Int("n", 500, "idle sandboxes")
	execs := fs.Int("execs", 200, "exec true calls among them")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), benchUsage)
		printFlags(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 || *execs < 1 {
		return badInput("bench density", "-n and -execs must be at least 1")
	}
	b, err := startBenchServer(ctx, 0, nil, daemonTuning{})
	if err != nil {
		return err
	}
	defer b.close()
	// A first sandbox warms what every one shares (the base template, the
	// page cache of the init and the agent); its memory is not counted.
	first, err := b.c.CreateSandbox(ctx, client.CreateRequest{})
	if err != nil {
		return err
	}
	if _, err := b.c.Exec(ctx, first.ID, client.ExecRequest{Cmd: []string{"true"}}); err != nil {
		return err
	}
	settle()
	m0, rss0 := meminfo("/proc/meminfo"), selfRSSKiB()
	before := usedKiB(m0)
	ids := make([]string, *n)
	defer func() {
		for _, id := range append(ids, first.ID) {
			if id != "" {
				b.c.DeleteSandbox(context.WithoutCancel(ctx), id)
			}
		}
	}()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for i := range *n {
		if err := interrupted(ctx); err != nil {
			return err
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			sb, err := b.c.CreateSandbox(ctx, client.CreateRequest{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("create %d: %w", i, err)
			}
			ids[i] = sb.ID
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	created := time.Since(start)
	settle()
	m1, rss1 := meminfo("/proc/meminfo"), selfRSSKiB()
	after := usedKiB(m1)
	added := addedKiB(m0, m1)
	per := float64(added) / float64(*n) / 1024
	fmt.Printf("density: %d idle sandboxes (created through the API, 8 at a time, in %s)\n", *n, created.Round(time.Millisecond))
	fmt.Printf("  host memory per sandbox      %6.2f MiB  (/proc/meminfo: what the host's anonymous memory, page tables, kernel stacks, slab, per-CPU memory and page cache grew by, %d MiB)\n", per, added>>10)
	printInitShare(per*1024, benchInits(ctx, b.d.rt, ids))
	printMeminfoShare(m0, m1, *n)
	fmt.Printf("    MemTotal - MemAvailable    %6.2f MiB  (%d MiB before, %d MiB after: the kernel's estimate, which counts part of reclaimable slab as free and moves from run to run)\n",
		float64(after-before)/float64(*n)/1024, before>>10, after>>10)
	fmt.Printf("  daemon RSS                   %6d MiB  (%d MiB before: %.1f KiB per sandbox)\n", rss1>>10, rss0>>10, float64(rss1-rss0)/float64(*n))
	var d []time.Duration
	for range *execs {
		if err := interrupted(ctx); err != nil {
			return err
		}
		id := ids[rand.IntN(len(ids))]
		t := time.Now()
		res, err := b.c.Exec(ctx, id, client.ExecRequest{Cmd: []string{"true"}})
		if err != nil || res.ExitCode != 0 {
			return fmt.Errorf("exec in %s: %v (exit %d)", id, err, res.ExitCode)
		}
		d = append(d, time.Since(t))
	}
	p := percentiles(d)
	fmt.Printf("  exec true among them (API)   p50 %s  p99 %s  max %s\n", ms(p[0]), ms(p[2]), ms(p[3]))
	for i, id := range ids {
		if err := b.c.DeleteSandbox(ctx, id); err != nil {
			return fmt.Errorf("destroy %s: %w", id, err)
		}
		ids[i] = ""
	}
	if err := b.c.DeleteSandbox(ctx, first.ID); err != nil {
		return err
	}
	first.ID = ""
	left, err := b.d.rt.List(ctx)
	if err != nil {
		return err
	}
	groups, _ := filepath.Glob("/sys/fs/cgroup/*/airlock/*-bench-*")
	dirs, _ := os.ReadDir(filepath.Join(b.dir, "sandboxes"))
	var sbDirs int
	for _, e := range dirs {
		if !strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(e.Name(), "pool-") {
			sbDirs++
		}
	}
	if len(left) > 0 || sbDirs > 0 {
		return fmt.Errorf("after destroying all: the runtime still lists %d sandboxes, %d sandbox directories left", len(left), sbDirs)
	}
	fmt.Printf("  destroyed all: nothing left (runtime, directories%s)\n", map[bool]string{true: "", false: fmt.Sprintf("; %d cgroups named bench", len(groups))}[len(groups) == 0])
	return nil
}

// settle lets freed memory and deferred work (RCU, slab frees) land
// before a reading of /proc/meminfo.
func settle() {
	time.Sleep(2 * time.Second)
	os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0)
	time.Sleep(500 * time.Millisecond)
}

// usedKiB is MemTotal less MemAvailable of a reading of /proc/meminfo.
func usedKiB(m map[string]int64) int64 { return m["MemTotal"] - m["MemAvailable"] }

// memCounters are the /proc/meminfo counters that hold what a process
// and its kernel objects use: anonymous memory, page tables, kernel
// stacks, slab, per-CPU allocations (cgroups and namespaces have them),
// and page cache (which holds shmem). Not VmallocUsed: kernel stacks are
// vmalloc'd, it would count them twice.
var memCounters = []string{"AnonPages", "PageTables", "KernelStack", "SUnreclaim", "SReclaimable", "Percpu", "Cached"}

// addedKiB is how much memCounters grew between readings m0 and m1.
// MemAvailable is no measure of it: an estimate that counts part of
// reclaimable slab as free, it moved by a third of the total between
// runs of 500 sandboxes whose counters moved by a few percent.
func addedKiB(m0, m1 map[string]int64) int64 {
	var kib int64
	for _, k := range memCounters {
		kib += m1[k] - m0[k]
	}
	return kib
}

// printMeminfoShare prints, per sandbox, how each of memCounters moved
// between readings m0 and m1 with n sandboxes more: host-wide, so the
// daemon's growth and anything else the host did is in them too.
func printMeminfoShare(m0, m1 map[string]int64, n int) {
	d := func(k string) float64 { return float64(m1[k]-m0[k]) / float64(n) }
	fmt.Printf("    host-wide, per sandbox     anonymous %.0f KiB, page tables %.0f, kernel stacks %.0f, slab %.0f unreclaimable + %.0f reclaimable, per-CPU %.0f, shmem %.0f, other page cache %.0f\n",
		d("AnonPages"), d("PageTables"), d("KernelStack"), d("SUnreclaim"), d("SReclaimable"), d("Percpu"), d("Shmem"), d("Cached")-d("Shmem"))
}

// selfRSSKiB is this process's resident memory.
func selfRSSKiB() int64 { return meminfo("/proc/self/status")["VmRSS"] }

func meminfo(path string) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// threadStackKiB is a thread's kernel stack (THREAD_SIZE on x86-64 and
// arm64 with 4 KiB pages).
const threadStackKiB = 16

// printInitShare says what a sandbox's host memory (perKiB) is made of:
// its init's own memory, page tables and threads' kernel stacks, read
// from the sandboxes' inits, and the rest, the kernel objects of its
// cgroups, namespaces and mounts. The init's program text is a
// memfd all of them share, so it is not counted.
func printInitShare(perKiB float64, inits []int) {
	if len(inits) == 0 {
		return
	}
	var anon, pte, threads int64
	for _, pid := range inits {
		m := meminfo(fmt.Sprintf("/proc/%d/status", pid))
		anon, pte, threads = anon+m["RssAnon"], pte+m["VmPTE"], threads+m["Threads"]
	}
	n := float64(len(inits))
	a, p, t := float64(anon)/n, float64(pte)/n, float64(threads)/n
	fmt.Printf("    the init's own memory      %6.0f KiB  (anonymous: the Go runtime, heap and stacks of the init and agent)\n", a)
	fmt.Printf("    its page tables            %6.0f KiB\n", p)
	fmt.Printf("    its threads' kernel stacks %6.0f KiB  (%.1f threads)\n", t*threadStackKiB, t)
	fmt.Printf("    the rest                   %6.0f KiB  (kernel objects, slab: cgroups, namespaces, mounts, task structures; and the daemon's share)\n", perKiB-a-p-t*threadStackKiB)
}

// benchInits is the init pid of each of the sandboxes ids, as the
// runtime holds them.
func benchInits(ctx context.Context, rt *linux.Runtime, ids []string) []int {
	var pids []int
	for _, id := range ids {
		sb, err := rt.Get(ctx, id)
		if s, ok := sb.(interface{ InitPid() int }); err == nil && ok && s.InitPid() > 0 {
			pids = append(pids, s.InitPid())
		}
	}
	return pids
}
