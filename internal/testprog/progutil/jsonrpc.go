package progutil

import (
	"encoding/json"
	"io"
)

// LineWriter writes JSON-RPC 2.0 messages one per line, as the stdio
// peers of the scripts (ACP agents, AHP hosts) answer.
type LineWriter struct{ out *json.Encoder }

// NewLineWriter writes to w (os.Stdout for a stdio peer).
func NewLineWriter(w io.Writer) *LineWriter { return &LineWriter{out: json.NewEncoder(w)} }

// Send writes m with "jsonrpc": "2.0" added.
func (l *LineWriter) Send(m map[string]any) {
	m["jsonrpc"] = "2.0"
	l.out.Encode(m)
}

// Fail answers request id with an error object (data only when not nil).
func (l *LineWriter) Fail(id any, code int, msg string, data any) {
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	l.Send(map[string]any{"id": id, "error": e})
}
