package commands

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestTraceRPCError: a JSON-RPC error answer is traced with its code and
// message, cut at maxTracedErrorMessage and stripped of control
// characters, never with its data; a JSON body once, an event stream per
// data line.
func TestTraceRPCError(t *testing.T) {
	long := strings.Repeat("x", maxTracedErrorMessage+50)
	for _, tc := range []struct {
		name, body string
		sse        bool
		want       string
	}{
		{"json", `{"jsonrpc":"2.0","id":7,"error":{"code":-32042,"message":"URL elicitation required","data":{"elicitations":[{"url":"https://secret.example/?code=abc"}]}}}`, false,
			"[trace] <   rpc error -32042 id=7: URL elicitation required\n"},
		{"long", `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"` + long + `"}}`, false,
			"[trace] <   rpc error -32000 id=1: " + long[:maxTracedErrorMessage] + "…\n"},
		{"control", `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"bad\u001b[31m\nrequest"}}`, false,
			"[trace] <   rpc error -32600 id=1: bad[31mrequest\n"},
		{"sse", "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"token\":\"t\"}}\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32601,\"message\":\"nope\"}}\n\n", true,
			"[trace] <   rpc result id=2\n[trace] <   rpc error -32601 id=3: nope\n"},
	} {
		var out bytes.Buffer
		b := &traceBody{ReadCloser: io.NopCloser(strings.NewReader(tc.body)), t: &tracer{w: &out}, sse: tc.sse}
		if _, err := io.Copy(io.Discard, b); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if out.String() != tc.want {
			t.Errorf("%s: trace = %q, want %q", tc.name, out.String(), tc.want)
		}
	}
}
