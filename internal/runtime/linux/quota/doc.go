// Package quota bounds the disk a sandbox's writable layer may use. It keeps
// one filesystem, backed by a sparse image on a loop device and mounted at
// the runtime's state directory, in which each sandbox's directory is
// bounded: on btrfs it is a subvolume with a qgroup limit, on ext4 a project
// with a hard block and inode limit. Writes past the limit fail with EDQUOT
// and the host disk grows by at most what was written. Where the kernel
// supports neither, each directory gets a small ext4 image of its own.
// It also snapshots a sandbox's directory and adopts a snapshot as another
// sandbox's, and is the one place that walks these trees (ShiftOwners,
// DiskUsage).
//
// It must never format or overwrite an existing image or filesystem, never
// turn on quotas of a btrfs it did not format, never limit project 0 (the
// default project of every other file), never follow a symlink or cross a
// mount in a tree a sandbox wrote, and never print.
package quota
