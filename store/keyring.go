package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/zalando/go-keyring"
)

const (
	// keyringService is the service name of every agentauth keyring entry.
	keyringService = "agentauth"
	// keyringTimeout bounds every keyring call: a locked or absent keyring
	// (headless Linux, SSH) must fail fast rather than hang a login.
	keyringTimeout = 3 * time.Second
	// indexFile lists the keys stored in the keyring; it holds no secret.
	indexFile = "keyring-index.json"
	// chunkSize is the most bytes of credential JSON in one keyring entry
	// once a credential is split. Windows allows 2560 bytes per secret; macOS
	// about 3000 after base64 of service, account and secret together.
	chunkSize = 2000
	// chunkHeader starts a main entry that points at chunks; credential
	// JSON starts with "{", so the two cannot be confused.
	chunkHeader = "agentauth-chunks v1 "
)

var (
	// ErrKeyringUnavailable is matched (errors.Is) by every error the OS
	// keyring itself returns, timeouts included: the caller may fall back to
	// the file store.
	ErrKeyringUnavailable = errors.New("the OS keyring is unavailable")
	// ErrKeyringTimeout is matched when the keyring did not answer in time.
	ErrKeyringTimeout = errors.New("the OS keyring did not answer")
)

// keyringError is a failure of the OS keyring; its message ends with the fix.
type keyringError struct {
	op  string // "read from", "write to", ...
	err error
}

func (e *keyringError) Error() string {
	msg, fix := plainKeyringError(e.err)
	return "cannot " + e.op + " the OS keyring: " + msg + "\n" + fix
}

func (e *keyringError) Unwrap() []error { return []error{ErrKeyringUnavailable, e.err} }

// ring is the part of a keyring agentauth uses, under service "agentauth".
type ring interface {
	Set(user, secret string) error
	Get(user string) (string, error) // keyring.ErrNotFound when absent
	Delete(user string) error        // keyring.ErrNotFound when absent
}

// osRingMu serialises calls into go-keyring, whose providers (the mock
// included) are not safe for concurrent use.
var osRingMu sync.Mutex

// osRing is the OS keyring through go-keyring.
type osRing struct{}

func (osRing) Set(user, secret string) error {
	osRingMu.Lock()
	defer osRingMu.Unlock()
	return keyring.Set(keyringService, user, secret)
}

func (osRing) Get(user string) (string, error) {
	osRingMu.Lock()
	defer osRingMu.Unlock()
	return keyring.Get(keyringService, user)
}

func (osRing) Delete(user string) error {
	osRingMu.Lock()
	defer osRingMu.Unlock()
	return keyring.Delete(keyringService, user)
}

// timedRing runs every call of ring in a goroutine and gives up after
// timeout (or when ctx ends); a call that hangs is abandoned.
type timedRing struct {
	ring    ring
	timeout time.Duration
}

func (t timedRing) do(ctx context.Context, call func() (string, error)) (string, error) {
	type result struct {
		v   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := call()
		ch <- result{v, err}
	}()
	timer := time.NewTimer(t.timeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-timer.C:
		return "", fmt.Errorf("%w within %s", ErrKeyringTimeout, t.timeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (t timedRing) set(ctx context.Context, user, secret string) error {
	_, err := t.do(ctx, func() (string, error) { return "", t.ring.Set(user, secret) })
	return err
}

func (t timedRing) get(ctx context.Context, user string) (string, error) {
	return t.do(ctx, func() (string, error) { return t.ring.Get(user) })
}

func (t timedRing) delete(ctx context.Context, user string) error {
	_, err := t.do(ctx, func() (string, error) { return "", t.ring.Delete(user) })
	return err
}

// ProbeKeyring checks that the OS keyring works by writing, reading and
// deleting a probe entry, each under a 3 s timeout. Run it before a login
// starts, so a missing keyring stops the login before the user approves
// anything; the error says how to use the file store instead.
func ProbeKeyring(ctx context.Context) error {
	return probe(ctx, timedRing{sessionRing{osRing{}}, keyringTimeout})
}

func probe(ctx context.Context, r timedRing) error {
	const user = "agentauth-probe"
	want := rand.Text()
	if err := r.set(ctx, user, want); err != nil {
		return keyringFailure(ctx, "write to", err)
	}
	got, err := r.get(ctx, user)
	if err != nil {
		return keyringFailure(ctx, "read from", err)
	}
	if err := r.delete(ctx, user); err != nil {
		return keyringFailure(ctx, "delete from", err)
	}
	if got != want {
		return &keyringError{"use", errors.New("a probe entry read back differs from what was written")}
	}
	return nil
}

// keyringFailure wraps err from the keyring, unless it is ctx's own end.
func keyringFailure(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("cannot %s the OS keyring: %w", op, err)
	}
	return &keyringError{op, err}
}

type keyringStore struct {
	dir, index string
	ring       timedRing
	locker
}

func newKeyring(dir string, r ring, timeout time.Duration) *keyringStore {
	return &keyringStore{
		dir:    dir,
		index:  filepath.Join(dir, indexFile),
		ring:   timedRing{r, timeout},
		locker: locker{dir},
	}
}

func (s *keyringStore) Kind() string { return KindKeyring }

func (s *keyringStore) Location() string {
	return "OS keyring (service " + keyringService + "), index " + s.index
}

type indexDoc struct {
	Version int   `json:"version"`
	Keys    []Key `json:"keys"`
}

func (s *keyringStore) readIndex() ([]Key, error) {
	var doc indexDoc
	if err := readJSON(s.index, &doc); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return doc.Keys, nil
}

func (s *keyringStore) writeIndex(keys []Key) error {
	slices.SortFunc(keys, compareKeys)
	b, err := json.MarshalIndent(indexDoc{Version: fileVersion, Keys: keys}, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode the keyring index: %w", err)
	}
	return writeFileAtomic(s.index, append(b, '\n'))
}

func (s *keyringStore) Get(ctx context.Context, k Key) (*Credential, error) {
	user := keyHash(k)
	v, err := s.ring.get(ctx, user)
	if errors.Is(err, keyring.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, keyringFailure(ctx, "read from", err)
	}
	if h, ok := parseChunkHeader(v); ok {
		if v, err = s.readChunks(ctx, user, h); err != nil {
			return nil, err
		}
	}
	var c Credential
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return nil, fmt.Errorf("cannot read keyring entry %s/%s: %w: %w\nLog in again to replace it.", keyringService, user, ErrCorrupt, err)
	}
	return &c, nil
}

func (s *keyringStore) List(ctx context.Context) ([]*Credential, error) {
	keys, err := s.readIndex()
	if err != nil {
		return nil, err
	}
	var out []*Credential
	for _, k := range keys {
		if k.IsRegistration() {
			continue
		}
		c, err := s.Get(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue // removed from the keyring by hand
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	sortCredentials(out)
	return out, nil
}

func (s *keyringStore) Put(ctx context.Context, c *Credential) error {
	if err := checkKey(c.Key); err != nil {
		return err
	}
	b, err := json.Marshal(stamped(c))
	if err != nil {
		return fmt.Errorf("cannot encode the credential: %w", err)
	}
	unlock, err := s.storeLock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	keys, err := s.readIndex()
	if err != nil {
		return err
	}
	user := keyHash(c.Key)
	old, err := s.ring.get(ctx, user)
	if err != nil && !errors.Is(err, keyring.ErrNotFound) {
		return keyringFailure(ctx, "read from", err)
	}
	if err := s.writeEntry(ctx, user, string(b)); err != nil {
		return err
	}
	if h, ok := parseChunkHeader(old); ok {
		s.deleteChunks(ctx, user, h)
	}
	if slices.Contains(keys, c.Key) {
		return nil
	}
	return s.writeIndex(append(keys, c.Key))
}

func (s *keyringStore) Delete(ctx context.Context, k Key) error {
	unlock, err := s.storeLock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	keys, err := s.readIndex()
	if err != nil {
		return err
	}
	user := keyHash(k)
	old, err := s.ring.get(ctx, user)
	switch {
	case errors.Is(err, keyring.ErrNotFound):
	case err != nil:
		return keyringFailure(ctx, "read from", err)
	default:
		if err := s.ring.delete(ctx, user); err != nil && !errors.Is(err, keyring.ErrNotFound) {
			return keyringFailure(ctx, "delete from", err)
		}
		if h, ok := parseChunkHeader(old); ok {
			s.deleteChunks(ctx, user, h)
		}
	}
	if i := slices.Index(keys, k); i >= 0 {
		return s.writeIndex(slices.Delete(keys, i, i+1))
	}
	return nil
}

func (s *keyringStore) Lock(ctx context.Context, k Key) (func(), error) {
	return s.keyLock(ctx, k)
}

// writeEntry stores secret under user, split into chunks when the keyring
// says it is too big.
func (s *keyringStore) writeEntry(ctx context.Context, user, secret string) error {
	err := s.ring.set(ctx, user, secret)
	if !errors.Is(err, keyring.ErrSetDataTooBig) {
		if err != nil {
			return keyringFailure(ctx, "write to", err)
		}
		return nil
	}
	h := chunks{gen: rand.Text()[:8]}
	for i, part := range split(secret, chunkSize) {
		if err := s.ring.set(ctx, chunkUser(user, h.gen, i), part); err != nil {
			s.deleteChunks(ctx, user, h)
			return keyringFailure(ctx, "write to", err)
		}
		h.n = i + 1
	}
	if err := s.ring.set(ctx, user, h.String()); err != nil {
		s.deleteChunks(ctx, user, h)
		return keyringFailure(ctx, "write to", err)
	}
	return nil
}

// chunks describes a credential split over n entries of generation gen.
type chunks struct {
	gen string
	n   int
}

func (h chunks) String() string { return chunkHeader + h.gen + " " + strconv.Itoa(h.n) }

func parseChunkHeader(v string) (chunks, bool) {
	rest, ok := strings.CutPrefix(v, chunkHeader)
	if !ok {
		return chunks{}, false
	}
	gen, count, ok := strings.Cut(rest, " ")
	n, err := strconv.Atoi(count)
	if !ok || err != nil || n < 1 {
		return chunks{}, false
	}
	return chunks{gen, n}, true
}

func chunkUser(user, gen string, i int) string {
	return user + "." + gen + "." + strconv.Itoa(i)
}

func (s *keyringStore) readChunks(ctx context.Context, user string, h chunks) (string, error) {
	var b strings.Builder
	for i := range h.n {
		part, err := s.ring.get(ctx, chunkUser(user, h.gen, i))
		if errors.Is(err, keyring.ErrNotFound) {
			return "", fmt.Errorf("cannot read keyring entry %s/%s: %w: part %d of %d is missing\nLog in again to replace it.", keyringService, user, ErrCorrupt, i+1, h.n)
		}
		if err != nil {
			return "", keyringFailure(ctx, "read from", err)
		}
		b.WriteString(part)
	}
	return b.String(), nil
}

// deleteChunks removes the parts of h, best effort: a leftover part holds a
// secret the main entry no longer points at, and a failure here must not
// fail the write that made it obsolete.
func (s *keyringStore) deleteChunks(ctx context.Context, user string, h chunks) {
	for i := range h.n {
		s.ring.delete(ctx, chunkUser(user, h.gen, i))
	}
}

// split cuts s into pieces of at most size bytes without splitting a UTF-8
// sequence, since some keyrings store text.
func split(s string, size int) []string {
	var parts []string
	for len(s) > size {
		n := size
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		parts = append(parts, s[:n])
		s = s[n:]
	}
	return append(parts, s)
}
