package wire

import (
	"crypto/tls"
	"errors"
	"net"
	"strings"
)

// ErrPlainHTTP is what a TLS connection (https, wss) to a server that
// answers in plain HTTP fails with.
var ErrPlainHTTP = errors.New("the server answered in plain HTTP, not TLS")

// transportCause is the part of a failed connection's error a person
// needs: "connection refused", "no such host", "the server answered in
// plain HTTP", rather than the library's chain ("failed to WebSocket dial:
// failed to send handshake request: Get …: dial tcp …: connect: …").
// The error it returns unwraps to err, so errors.Is still sees the cause.
func transportCause(err error) error {
	var op *net.OpError
	var dns *net.DNSError
	var rec tls.RecordHeaderError
	switch {
	case errors.As(err, &rec) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return &causeError{msg: ErrPlainHTTP.Error(), err: errors.Join(ErrPlainHTTP, err)}
	case errors.As(err, &dns):
		return &causeError{msg: "no such host " + dns.Name, err: err}
	case errors.As(err, &op) && op.Err != nil:
		msg := op.Err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return &causeError{msg: msg, err: err}
	}
	return err
}

type causeError struct {
	msg string
	err error
}

func (e *causeError) Error() string { return e.msg }
func (e *causeError) Unwrap() error { return e.err }
