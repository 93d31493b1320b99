// How the network log reads one egress event. A connection the policy
// allowed whose upstream then failed (the egress proxy sets
// upstream_error, keeping decision "allowed") is shown as failed: a green
// "allowed" would tell a person the request went through when the host
// was never reached.

// UPSTREAM_ERRORS says in words what each upstream_error means, for an
// event that carries no reason of its own.
export const UPSTREAM_ERRORS = {
  dns: 'the host name did not resolve',
  refused: 'the host refused the connection',
  unreachable: 'the host could not be reached',
  timeout: 'the host did not answer in time',
  tls: 'the TLS handshake with the host failed',
  reset: 'the host reset the connection',
  other: 'the connection to the host failed',
};

// outcome is what became of event e: kind (allowed, denied or failed, the
// log's filter values), the badge's label and colour, and the reason.
export function outcome(e) {
  if (e.upstream_error) {
    return {
      kind: 'failed',
      label: 'failed: ' + e.upstream_error,
      color: 'amber',
      reason: e.reason || UPSTREAM_ERRORS[e.upstream_error] || UPSTREAM_ERRORS.other,
    };
  }
  if (e.decision === 'denied') return { kind: 'denied', label: 'denied', color: 'red', reason: e.reason || '' };
  return { kind: e.decision, label: e.decision, color: e.decision === 'allowed' ? 'green' : 'gray', reason: e.reason || '' };
}
