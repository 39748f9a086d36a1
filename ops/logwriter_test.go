package ops

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer records each write(2) the LogWriter would make.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.b.Write(p)
}

func (b *lockedBuffer) get() (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String(), b.writes
}

// TestLogWriter: a direct record is written at once; held records are
// written together in one write within the interval, in order; a direct
// record writes the held ones before it; Close writes what is held and
// later records go straight through.
func TestLogWriter(t *testing.T) {
	var out lockedBuffer
	lw := NewLogWriter(&out)
	lw.Write([]byte("direct\n"))
	if s, n := out.get(); s != "direct\n" || n != 1 {
		t.Fatalf("after a direct record: %q in %d writes", s, n)
	}
	want := "direct\n"
	held := lw.Held()
	for i := range 100 {
		fmt.Fprintf(held, "call %d\n", i)
		want += fmt.Sprintf("call %d\n", i)
	}
	if s, _ := out.get(); s != "direct\n" {
		t.Fatalf("held records written at once: %q", s)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, n := out.get()
		if s == want {
			if n != 2 {
				t.Errorf("100 held records written in %d writes, want 1", n-1)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the held records were not written: %q", s)
		}
		time.Sleep(time.Millisecond)
	}
	held.Write([]byte("held\n"))
	lw.Write([]byte("direct 2\n"))
	if s, _ := out.get(); !strings.HasSuffix(s, "held\ndirect 2\n") {
		t.Errorf("a direct record after a held one: %q", s)
	}
	held.Write([]byte("held 2\n"))
	lw.Close()
	held.Write([]byte("after close\n"))
	if s, _ := out.get(); !strings.HasSuffix(s, "direct 2\nheld 2\nafter close\n") {
		t.Errorf("after Close: %q", s)
	}
}

// TestLogWriterBound: no more than LogBufferSize bytes are held; a record
// larger than that is written whole, after the ones before it.
func TestLogWriterBound(t *testing.T) {
	var out lockedBuffer
	lw := NewLogWriter(&out)
	defer lw.Close()
	held := lw.Held()
	rec := []byte(strings.Repeat("x", 1023) + "\n")
	for range 3 * LogBufferSize / len(rec) {
		held.Write(rec)
	}
	s, _ := out.get()
	if waiting := 3*LogBufferSize - len(s); waiting > LogBufferSize {
		t.Errorf("%d bytes held, more than %d", waiting, LogBufferSize)
	}
	big := []byte(strings.Repeat("y", 2*LogBufferSize) + "\n")
	held.Write(big)
	if s, _ := out.get(); len(s) != 3*LogBufferSize+len(big) || !strings.HasSuffix(s, string(big)) {
		t.Errorf("after a large record: %d bytes written, want %d ending with it", len(s), 3*LogBufferSize+len(big))
	}
}
