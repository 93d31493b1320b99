// Package quota bounds the disk a sandbox's writable layer may use. It keeps
// one ext4 filesystem with project quotas, backed by a sparse image on a loop
// device and mounted at the runtime's state directory; each sandbox's upper
// directory is a project with a hard block and inode limit, so writes past the
// limit fail with EDQUOT and the host disk grows by at most what was written.
//
// It must never format or overwrite an existing image or filesystem, never
// limit project 0 (the default project of every other file), and never print.
package quota
