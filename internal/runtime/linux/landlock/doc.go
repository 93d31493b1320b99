// Package landlock owns the sandbox's file system access rules: which paths
// sandboxed code may read and execute, and which few it may change, enforced
// by the kernel's Landlock LSM on every thread of the sandbox init and so on
// every process it starts.
//
// It must never leave a thread unrestricted (it restricts all of them or
// fails), never handle an access right it does not know the meaning of, and
// never use signal or abstract-socket scoping: threads restricted one by one
// get sibling domains, and scoping would stop processes started from
// different threads from signalling each other.
package landlock
