// Package agent is the in-sandbox PID 1 and the host's client for it.
//
// The agent owns, inside one sandbox: reaping every child (orphans included),
// starting processes and killing their whole tree on timeout or disconnect,
// and file operations performed with the sandbox user's filesystem
// credentials. It must never resolve a path outside its Root (every path goes
// through openat2 with RESOLVE_IN_ROOT, so a symlink planted by the sandbox
// cannot point the agent at a host file), never follow a symlink at the final
// component when replacing or removing, and never hold a whole file or a
// whole output stream in memory.
//
// The server side (Serve) is Linux-only; the Client builds anywhere.
//
// # Protocol
//
// One operation per unix-socket connection. The client writes one JSON
// Request terminated by '\n' (at most MaxRequest bytes). After that both
// sides exchange frames:
//
//	kind    1 byte
//	length  4 bytes, big-endian, at most MaxPayload (64 KiB)
//	payload length bytes
//
// Frame kinds and who sends them:
//
//	'd' data       both   file bytes (read, write) or stdin bytes (exec)
//	'z' end        client end of the data stream (stdin EOF, end of upload)
//	's' started    agent  {"pid":N}, the first frame of a successful exec
//	'o' stdout     agent  process stdout bytes
//	'e' stderr     agent  process stderr bytes
//	'k' keepalive  agent  empty; lets the agent notice a dead client
//	'n' entry      agent  one runtime.FileInfo of a directory listing
//	'x' exit       agent  ExitFrame, the last frame of an exec
//	'r' result     agent  op result (JSON), the last frame of other ops
//	'!' error      agent  Error {"code","message"}, the last frame of any op
//	'w' resize     client TTYSize {"cols","rows"} for an exec on a terminal
//	'a' attached   agent  AttachedFrame {"offset","dropped"}: where the
//	               output frames after it start, and how many bytes before
//	               that were no longer kept
//
// Operations (Request.Op) and their frame sequences:
//
//	ping    -> r {"version"} (ProtocolVersion; an agent of version 1
//	           answers {})
//	exec    -> s, then o/e/k* until x; the client sends d* then z for stdin.
//	           With "tty" the process runs on a new terminal: o carries all
//	           its output, d is typed input, w resizes, z is ignored.
//	           Closing the connection before x kills the process tree.
//	signal  -> r {}
//	read    -> d* then r {"size"}; a device, FIFO, socket or kernel file
//	           (/proc, /sys...) is refused before any d, and a file that
//	           changes size or is written meanwhile ends with '!' (code
//	           changed) before its last d, so a client never holds all of
//	           a changed file
//	write   client sends d* then z -> r {"size"}; the file is replaced
//	           atomically only after z, never on a broken stream
//	stat    -> r runtime.FileInfo (lstat semantics)
//	list    -> n* then r {}
//	mkdir   -> r {}   (mkdir -p)
//	remove  -> r {}
//	rename  -> r {}
//	spawn   -> r JobInfo; starts a job (fields as for exec, and
//	           "buffer_bytes", and "close" (version 4) for a stdin closed
//	           at once): a process whose tree does not die with the
//	           connection, whose output the agent keeps (the newest
//	           buffer_bytes) and whose exit status it keeps until forget
//	attach  {"pid","offset","follow","hold"} -> a, then o/e (and an 'a' again
//	           where a follower fell behind the buffer), k while waiting;
//	           x when the job has ended, else (not following) r JobInfo.
//	           Closing the connection leaves the job running. With
//	           "hold" (version 4) the job drops none of its output this
//	           reader has not been sent: its process waits for the reader
//	           (as it would on a full pipe), until the reader goes away
//	input   {"pid","close"} client sends d* (w for a terminal) then z ->
//	           r {}; "close" closes the job's stdin after it. One input
//	           op at a time per job; it may stay open as long as the job
//	           runs, and ends with '!' (invalid) when the job ends
//	jobs    -> n JobInfo* then r {}, oldest first
//	forget  {"pid"} -> r {}; refuses a running job
//
// Any op can end with '!' instead; error codes are not_found, invalid,
// permission, exists, not_dir, is_dir, no_space, pid_limit, not_regular,
// changed and internal. The Client maps them to runtime and io/fs errors
// (see Error.Is).
package agent
