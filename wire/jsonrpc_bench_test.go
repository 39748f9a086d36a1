package wire_test

import (
	"strings"
	"testing"

	"github.com/agentauth/agentauth/wire"
)

// BenchmarkDecode measures the hot path every received message takes: a
// small request, and one carrying 64 KiB of params.
func BenchmarkDecode(b *testing.B) {
	for _, bm := range []struct{ name, msg string }{
		{"small", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`},
		{"64KiB", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
			strings.Repeat(`a\"b`, 16<<10) + `"}}}`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			data := []byte(bm.msg)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, derr := wire.Decode(data); derr != nil {
					b.Fatal(derr)
				}
			}
		})
	}
}
