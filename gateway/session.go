package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os/exec"
	"time"
)

// The front's sessions: minted, bound to the caller, bounded, and the
// backend connection each one dials.

// newSession registers a session for the caller. At the bound (MaxSessions,
// or MaxProcesses for a stdio backend) the least recently used session
// idle for at least evictIdle makes room (a client that never ends its
// sessions, as a command-line client run per call, would fill the table);
// with none, the new session is refused.
func (m *Mount) newSession(c Caller, cn conn) (*session, error) {
	b := make([]byte, 24)
	rand.Read(b)
	s := &session{id: base64.RawURLEncoding.EncodeToString(b), owner: ownerOf(c), conn: cn, last: time.Now()}
	limit := MaxSessions
	if m.b.Command != "" && m.b.Process != ProcessShared {
		limit = MaxProcesses
	}
	m.mu.Lock()
	var evicted *session
	var evictedLast time.Time
	if len(m.sessions) >= limit {
		for _, o := range m.sessions {
			o.mu.Lock()
			last := o.last
			o.mu.Unlock()
			if time.Since(last) >= evictIdle && (evicted == nil || last.Before(evictedLast)) {
				evicted, evictedLast = o, last
			}
		}
		if evicted != nil {
			delete(m.sessions, evicted.id)
		}
	}
	full := len(m.sessions) >= limit
	if !full {
		m.sessions[s.id] = s
	}
	m.mu.Unlock()
	if evicted != nil {
		go evicted.conn.end(context.Background())
	}
	if full {
		return nil, fmt.Errorf("backend %s has %d sessions in use, the most serve keeps; try again later", m.b.Name, limit)
	}
	return s, nil
}

// session finds the caller's session id; another caller's is not found.
func (m *Mount) session(id string, c Caller) *session {
	m.mu.Lock()
	s := m.sessions[id]
	m.mu.Unlock()
	if s == nil || s.owner != ownerOf(c) {
		return nil
	}
	s.mu.Lock()
	s.last = time.Now()
	s.mu.Unlock()
	return s
}

func (m *Mount) dropSession(s *session) {
	m.mu.Lock()
	if m.sessions[s.id] == s {
		delete(m.sessions, s.id)
	}
	m.mu.Unlock()
}

// dial makes a backend connection for a new session of caller c.
func (m *Mount) dial(c Caller) conn {
	if m.b.Command != "" && m.b.Process == ProcessShared {
		return m.sharedProcess().conn(c, false)
	}
	if m.b.Command != "" {
		return newStdioConn(m, c)
	}
	return &httpConn{m: m}
}

// statelessConn is the HTTP connection of sessionless requests.
func (m *Mount) statelessConn() conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stateless == nil {
		m.stateless = &httpConn{m: m, stateless: true}
	}
	return m.stateless
}

// Ready reports whether the backend can be reached, for serve's /readyz:
// an HTTP backend answers a GET of its URL with any HTTP status (MCP
// servers answer a bare GET with 405 or 400; only a failed connection or
// no answer within ctx counts as down); a stdio backend's command is an
// executable that can be started.
func (m *Mount) Ready(ctx context.Context) error {
	if m.b.Command != "" {
		if _, err := exec.LookPath(m.b.Command); err != nil {
			return fmt.Errorf("backend %s: cannot start %s: %w", m.b.Name, m.b.Command, err)
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.b.URL, nil)
	if err != nil {
		return fmt.Errorf("backend %s: %w", m.b.Name, err)
	}
	resp, err := m.g.transport.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("backend %s: not reachable: %w", m.b.Name, err)
	}
	resp.Body.Close()
	return nil
}
