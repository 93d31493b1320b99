// Package tenancy owns who a caller is: tenants and their quotas, API
// keys, sandbox tokens and console sessions, the credentials that name
// them (made, hashed and looked up here), and the cache of keys found by
// hash. The API asks it who a credential belongs to and what to create or
// delete; it speaks no HTTP, and decides no permission level. It owns the
// records (Tenant, Key, Token, ConsoleSession) and the narrow Store it
// needs, which the stores implement: it never imports them.
//
// It must never store or log a plaintext credential: only its SHA-256
// reaches the store, and a plaintext is handed back exactly once, to the
// caller that minted it. It must never compare credentials as strings: a
// credential is found by the hash the store looks up, so no timing of a
// comparison here tells an attacker how much of a guess was right.
package tenancy
