package ops

import (
	"crypto/tls"
	"fmt"
	"sync/atomic"
)

// Certificate holds serve's TLS certificate (--tls-cert, --tls-key) and
// reloads it on demand (SIGHUP): connections made after a reload get the
// new certificate, through tls.Config.GetCertificate.
type Certificate struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// LoadCertificate reads the certificate chain and key (PEM).
func LoadCertificate(certFile, keyFile string) (*Certificate, error) {
	c := &Certificate{certFile: certFile, keyFile: keyFile}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again; on error the certificate in use stays.
func (c *Certificate) Reload() error {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("cannot load the TLS certificate %s and key %s: %w", c.certFile, c.keyFile, err)
	}
	c.cur.Store(&cert)
	return nil
}

// Config is the listener's TLS configuration: TLS 1.2 at least, the
// current certificate per handshake.
func (c *Certificate) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cur.Load(), nil
		},
	}
}
