// Package store keeps agentauth's credentials: access and refresh tokens with
// their client registration (RFC 7591 §3.2.1) and endpoints, keyed by
// (resource, issuer, scheme id). It owns the config directory's files and
// three backends behind one [Store] interface:
//
//   - keyring: the OS keyring through github.com/zalando/go-keyring, service
//     "agentauth". Every keyring call runs under a 3 s timeout. The whole
//     credential, as JSON, is the secret of one entry whose user name is the
//     32-hex-digit key hash (see below). Keyrings cannot be listed, so a
//     non-secret index, keyring-index.json, lists the keys.
//     When the platform refuses a value as too big (keyring.ErrSetDataTooBig:
//     macOS and Windows allow about 2.5 KB), the credential is split: the main
//     entry then holds "agentauth-chunks v1 <gen> <n>" and the parts, at most
//     2000 bytes each, sit in entries "<hash>.<gen>.<i>". A new generation is
//     written before the main entry points at it, so a crash never leaves a
//     half-written credential; the old generation is deleted afterwards.
//   - file: credentials.json, mode 0600, written atomically (temp file in the
//     same directory, fsync, rename, fsync of the directory).
//   - memory: this process only, for tests.
//
// Files in the config directory ($AGENTAUTH_CONFIG_DIR, else
// os.UserConfigDir()/agentauth; created 0700):
//
//	store                the remembered backend choice ("keyring" or "file")
//	credentials.json     file backend: every credential (secret, 0600)
//	keyring-index.json   keyring backend: the keys only (not secret, 0600)
//	locks/store.lock     flock held while credentials.json or the index is rewritten
//	locks/<hash>.lock    flock held by [Store.Lock], one per key
//
// <hash> is the first 16 bytes of SHA-256 over the JSON array
// [resource, issuer, scheme id], in hex. Locks are flock(2) locks, so they
// are implemented on unix systems only; elsewhere writes fail with an error.
//
// Writes are read-modify-write under locks/store.lock, so concurrent Puts from
// several processes never lose an update. A file that does not parse is
// reported with its path and never overwritten.
//
// store imports none of agentauth's other packages and never prints.
//
// Other modules use store only through mcptransport.Options.Store: the
// Store interface, Credential, Key and NewMemory are kept compatible for
// that. The rest is agentauth's implementation, not meant for import: its
// API changes as agentauth needs.
package store
