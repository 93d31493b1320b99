// Package secrets owns tenant secrets' validation, their encryption at rest
// (Box, under a master key), and the placeholders sandboxes hold instead of
// them. A sandbox never sees a secret's value: it gets a placeholder in an
// environment variable, and the egress proxy swaps the value in on the way
// out, only towards the hosts the secret names.
//
// It must never log, print or return a plaintext value except to the egress
// proxy's injection path (Box.Open), and never store one unencrypted.
package secrets
