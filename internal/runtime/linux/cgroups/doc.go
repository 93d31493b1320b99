// Package cgroups owns the control groups of sandboxes: one group per sandbox,
// named airlock/<name> in every hierarchy it needs, that bounds memory, CPU
// and the number of tasks, reports what the sandbox used, and kills every
// process in it. It works on cgroup v1, v2 and the hybrid of both, reading the
// layout from /proc/self/mountinfo. In a v1 pids hierarchy the group has one
// subgroup, Commands, that bounds the sandbox's commands apart from its init.
//
// It must never touch a group it did not create (it refuses to reuse a group
// that still holds processes), never place the daemon itself in a sandbox
// group, and never disable the kernel OOM killer: an OOM kill must stay inside
// the sandbox that ran out of memory.
package cgroups
