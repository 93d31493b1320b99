// Package egress is the proxy that is a sandbox's only way out to the
// network. It owns the per-sandbox allow-list policy (Policy, Compile,
// Rules), the parsing of hosts as clients write them (ParseHost), the
// classification of addresses the proxy must never reach on its own
// (Forbidden), and the proxy that applies them to every connection.
//
// It decides per connection, by domain or IP rule, and logs every decision.
// It resolves names itself and must never dial an address the sandbox chose
// or resolved: a client that names a host gets that name checked and
// resolved here, so DNS rebinding and "evil.test resolves to 127.0.0.1"
// tricks meet the same checks as a literal address. It must never dial a
// loopback, private, link-local, cloud-metadata or host address for a
// tenant's rule alone: only the operator opens such ranges
// (Config.AllowPrivate), and then an IP/CIDR rule must still list the
// address explicitly (Rules.AllowsIP). A whole-internet rule ("0.0.0.0/0",
// "::/0") admits a name only when every address the proxy resolved it to
// is public, and the proxy dials only those addresses. It must never treat
// a string that some resolver would read as an IP address as a name.
//
// A policy may ask instead of deny (Policy.Ask): a connection to a target
// no allow entry admits and no deny entry lists is held, the client
// answered nothing, while the approvals service (Config.Ask) puts it to a
// person; held connections to one host and port share one question.
// Approved, it goes on as if the allow list had listed the target, through
// the same address checks and interception; refused, unanswered by the
// policy's ask_timeout_s, or with nobody to ask, it is refused as a
// denied target is. It must never ask about a denied target, nor carry a
// held connection on anything but an answer that allows it.
//
// TLS is intercepted only for hosts a secret is bound to (SetSecrets): the
// proxy ends the sandbox's TLS with a certificate from that sandbox's own
// CA, swaps placeholders for values, and opens its own verified TLS
// upstream. Every other tunnel is carried untouched, its bytes never
// decrypted.
//
// On those intercepted tunnels the proxy also meters model API calls
// (OpenAI Responses and Chat Completions, Anthropic Messages, Gemini
// generateContent): it reads the token usage from each answer as it
// streams through, never holding it back or changing a byte, and logs it
// (KindModelUsage) before the bytes that carry it reach the sandbox, so a
// budget gate (SetModelGate) sees every answered call before the next one
// leaves. It must never log usage it could not read as zero: unknown
// counts are null.
package egress
