package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// sseReader reads a backend's text/event-stream (WHATWG HTML §9.2.5) as
// frames, keeping what a browser drops: an event without data that sets an
// id or a retry time is a frame too. MCP servers send such "priming"
// events so that a client can resume a stream they close (MCP 2025-11-25
// "Transports", Resumability and Redelivery), and the gateway must pass
// them on; wire.SSEReader dispatches like a browser, so this one is ours.
type sseReader struct {
	r     *bufio.Reader
	limit int
}

var errFrameTooLarge = errors.New("event too large")

func newSSEReader(r io.Reader, limit int64) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10), limit: int(limit)}
}

// next returns the next frame; io.EOF at the end of the stream.
func (s *sseReader) next() (frame, error) {
	var f frame
	var data bytes.Buffer
	has := false
	for {
		line, err := s.line()
		if err != nil {
			if errors.Is(err, io.EOF) && has {
				break
			}
			return frame{}, err
		}
		if len(line) == 0 {
			if has {
				break
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "data":
			if f.dataSeen {
				data.WriteByte('\n')
			}
			data.Write(value)
			f.dataSeen = true
			if data.Len() > s.limit {
				return frame{}, errFrameTooLarge
			}
		case "id":
			if !bytes.ContainsRune(value, 0) {
				f.id = string(value)
			}
		case "retry":
			f.retry = string(value)
		default:
			continue // event type and unknown fields: MCP uses "message" only
		}
		has = true
	}
	f.data = data.Bytes()
	return f, nil
}

// line reads one line ended by LF or CRLF, without its end (a lone CR,
// which no MCP server sends, is kept as data).
func (s *sseReader) line() ([]byte, error) {
	var out []byte
	for {
		b, err := s.r.ReadSlice('\n')
		out = append(out, b...)
		if len(out) > s.limit+64 {
			return nil, errFrameTooLarge
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if len(out) > 0 && errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		break
	}
	out = bytes.TrimSuffix(out, []byte("\n"))
	out = bytes.TrimSuffix(out, []byte("\r"))
	return out, nil
}
