// Package noderpc carries the runtime interface (runtime.Runtime and the
// optional interfaces of its sandboxes) over the node API, so the control
// plane drives a node's Linux runtime exactly as it drives a local one.
// NewServer serves a runtime on a node under /node/v1/ (never
// /node/v1/status, which package nodes owns); NewClient is the control
// plane's runtime.Runtime for one node. The package holds no state of its
// own beyond what one call needs (and, on the server, connections accepted
// in a sandbox until the client picks them up); it must never decide
// anything about a sandbox: every call is the runtime's, and its error,
// kind and message, is handed back unchanged.
//
// # Wire format
//
// Every request carries "Airlock-Node-Protocol: 1"; a node refuses any
// other version with 400 rather than guess what a newer field means.
// Calls that return once (Create, Stat, Spawn, ...) are plain HTTP: a JSON
// body in (at most 1 MiB), a JSON body out. A failure is an HTTP error
// status with a JSON error: its message and its kinds (runtime.ErrNotFound
// ..., the fs and syscall errors callers test for, *runtime.NotRegularError
// and *runtime.RangeError with their fields), so errors.Is and errors.As
// answer on the client as they do beside the runtime. The status is for
// people reading logs; the client reads the kinds.
//
// Calls that stream (Exec, ReadFile, Attach, OpenInput, Dial, Listen) send
// frames in the response body, and in the request body where the client
// has more than one thing to say:
//
//	kind (1 byte) | length (4 bytes, big-endian) | payload (length bytes)
//
// A frame is at most 1 MiB; data frames carry at most 64 KiB, so neither
// side holds more than a frame per stream, and HTTP/2 flow control paces
// the rest (a 200 MB file crosses in constant memory). The kinds:
//
//	q  request JSON, the first frame of an exec's request body
//	h  head JSON, a stream's first response frame (pid, addresses)
//	d  data: stdin, a file's bytes, a connection's bytes
//	o  e  stdout, stderr of an exec
//	j  a job's output: stream (1 byte), offset (8), dropped (8), data
//	w  a terminal's new size (JSON)
//	a  a listener's request for its next connection
//	k  the answer to one w, a, or (on a held stdin) d frame, in order;
//	   on a connection, to the end of the request body (its half-close)
//	r  result JSON: the call's end (exit status, size, JobEnd)
//	x  error JSON: the call's end, failed
//	z  end: of stdin (request), of a stream that has no result (response)
//
// A response body that stops before its r, x or z frame was cut: the
// client reports the node unreachable (runtime.ErrUnavailable). An error
// found before the first frame is sent as a plain HTTP error instead.
//
// Request bodies with one stream only (WriteFile, Input, a connection's
// bytes, the tar of a snapshot, volume or template being imported, an
// image archive) are that stream, unframed: the body's end is its end,
// and a client that fails mid-way resets the HTTP/2 stream, which the
// node sees as a read error, never as a short file. An export's tar
// (GET .../tar?offset=N) is the stream from byte N on, unframed, so a
// transfer cut off resumes where the receiver's spool ends.
//
// Why this shape: HTTP/2 gives the multiplexing, flow control and mutual
// TLS; one frame format on top is enough to put several streams and a
// final status in one body, and is the agent's own framing, so a node
// passes a stream through without re-buffering it. Every call is its own
// HTTP request whose context is the runtime call's: a client that
// cancels resets the stream, the node's handler sees its request context
// end, and the runtime acts as it does for a local caller that cancels
// (an exec's process tree is killed, an attach detaches).
//
// Some calls do in one round trip what takes several of the others, for
// the hot path of a create -> exec -> delete cycle (three round trips):
// POST .../run runs a job to its end (runtime.OneShotRunner: spawn, its
// stdin, a holding attach, and forget once it has ended; the request is
// a q frame and, when it says so, the job's stdin as d frames and a z;
// the response an h frame with the JobInfo, j frames and the JobEnd as
// r), and POST .../destroy destroys a sandbox and answers its final
// stats (runtime.DestroyStatser). The client also hands out a sandbox's
// handle without asking the node (runtime.LazyGetter): a later call on
// a sandbox that is not there answers not found.
//
// New calls are added under the same protocol, never changed: a node
// answers a route it does not have with 404 and ErrUnsupported, and a
// client that gets that answer to a call newer than protocol 1's first
// nodes makes it of the older calls instead (one round trip lost, the
// behaviour the same).
//
// A node that runs its sandboxes' egress proxies (NewServerWith) also
// serves internal/egresshost's calls, plain JSON: PUT
// .../sandboxes/{id}/egress (attach, or replace the spec), GET
// /node/v1/egress/events (the journal after an offset, a long poll) and
// POST /node/v1/egress/asks/{id} (a person's decision). The node closes a
// sandbox's proxy as it destroys the sandbox. A node without them answers
// them as routes it lacks, and the control plane proxies that node's
// sandboxes' traffic itself, through Listen.
//
// Connections a sandbox accepts on a Listen are announced on the listen
// stream (answering an a frame) under a random id, and the client picks
// each up with its own request, POST /node/v1/conns/{id}: one slow
// connection never holds up another, as it would multiplexed in one body.
package noderpc
