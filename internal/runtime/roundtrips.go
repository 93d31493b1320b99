package runtime

import "context"

// A runtime on another host (a node, reached over the node API) pays a
// round trip for every call. The optional interfaces here let such a
// runtime do in one call what a caller would otherwise do in several;
// callers use them through the functions beside them, which fall back
// to the plain calls, so a runtime in the caller's own process needs
// none of them.

// LazyGetter is implemented by runtimes whose Get asks another host
// whether the sandbox is there.
type LazyGetter interface {
	// LazyGet returns sandbox id's handle without asking: a call on a
	// sandbox that is not there answers ErrNotFound, as Get would have.
	LazyGet(ctx context.Context, id string) (Sandbox, error)
}

// GetLazy is rt's LazyGet where it has one, else its Get. Only a caller
// that treats ErrNotFound from its next call on the sandbox as it would
// Get's may use it: the sandbox service's exec (whose errors go through
// its lostError) and stop (to which a sandbox gone is no error) do.
func GetLazy(ctx context.Context, rt Runtime, id string) (Sandbox, error) {
	if lg, ok := rt.(LazyGetter); ok {
		return lg.LazyGet(ctx, id)
	}
	return rt.Get(ctx, id)
}

// FinalStats is a sandbox's last reading of its resource use, taken as
// it is destroyed (its cgroup goes with it).
type FinalStats struct {
	Stats Stats
	Err   error // why there is no reading (Stats is zero then)
}

// DestroyStatser is implemented by sandboxes that can read their stats
// and be destroyed in one call.
type DestroyStatser interface {
	// DestroyStats reads the sandbox's Stats and then destroys it, as
	// Destroy does. The error is Destroy's; the reading's is in
	// FinalStats.Err. A sandbox already gone is not an error (Destroy
	// is idempotent); its reading fails with ErrNotFound.
	DestroyStats(ctx context.Context) (FinalStats, error)
}

// DestroyStats destroys sb after reading its stats: in one call where sb
// is a DestroyStatser, else with Stats and Destroy.
func DestroyStats(ctx context.Context, sb Sandbox) (FinalStats, error) {
	if ds, ok := sb.(DestroyStatser); ok {
		return ds.DestroyStats(ctx)
	}
	st, err := sb.Stats(ctx)
	return FinalStats{Stats: st, Err: err}, sb.Destroy(ctx)
}

// OneShotRunner is implemented by sandboxes that can run a job to its
// end in one call: the form of exec whose caller waits for the end.
type OneShotRunner interface {
	// RunJob spawns req as a job with opts (as Spawn), hands its JobInfo
	// to started, writes req.Stdin (when not nil) to the job's stdin
	// and closes it, sends its output from its first byte to out while
	// it runs (AttachHold), and once it has ended forgets it (Forget)
	// and returns its end.
	//
	// Unless it returns an end with Exit set and no error, the job is
	// kept (or was never started: started was not called), and the
	// caller follows it on from JobEnd.Next with Attach, as after an
	// attach that broke. An error from started or out stops the call
	// (the job goes on) and is returned; so does ctx's end.
	RunJob(ctx context.Context, req ExecRequest, opts JobOptions, started func(JobInfo) error, out func(JobOutput) error) (JobEnd, error)
}

// RunJob runs req as a job of jr to its end, as OneShotRunner.RunJob
// says: in one call where jr is a OneShotRunner, else with RunJobSteps.
func RunJob(ctx context.Context, jr JobRunner, req ExecRequest, opts JobOptions, started func(JobInfo) error, out func(JobOutput) error) (JobEnd, error) {
	if o, ok := jr.(OneShotRunner); ok {
		return o.RunJob(ctx, req, opts, started, out)
	}
	return RunJobSteps(ctx, jr, req, opts, started, out)
}

// RunJobSteps is RunJob made of jr's Spawn, Input, Attach and Forget.
func RunJobSteps(ctx context.Context, jr JobRunner, req ExecRequest, opts JobOptions, started func(JobInfo) error, out func(JobOutput) error) (JobEnd, error) {
	stdin := req.Stdin
	req.Stdin, req.Stdout, req.Stderr = nil, nil, nil
	opts.CloseStdin = stdin == nil
	info, err := jr.Spawn(ctx, req, opts)
	if err != nil {
		return JobEnd{}, err
	}
	if err := started(info); err != nil {
		return JobEnd{}, err
	}
	if stdin != nil {
		// Not bound by ctx: a caller that stops following leaves the job
		// to run, and its input to arrive.
		go jr.Input(context.WithoutCancel(ctx), info.Pid, stdin, true)
	}
	end, err := jr.Attach(ctx, info.Pid, 0, AttachHold, out)
	if err != nil || end.Exit == nil {
		return end, err
	}
	// Its caller has it all: the agent need not keep it. A job not
	// forgotten is dropped with its sandbox.
	_ = jr.Forget(context.WithoutCancel(ctx), info.Pid)
	return end, nil
}
