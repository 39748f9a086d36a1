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

// TestLogWriter: the first record is written at once; a burst after it is
// held and written in one write within the interval, in order; Close
// writes what is held and later records go straight through.
func TestLogWriter(t *testing.T) {
	var out lockedBuffer
	lw := NewLogWriter(&out)
	lw.Write([]byte("first\n"))
	if s, n := out.get(); s != "first\n" || n != 1 {
		t.Fatalf("after the first record: %q in %d writes", s, n)
	}
	var want strings.Builder
	want.WriteString("first\n")
	for i := range 100 {
		fmt.Fprintf(lw, "record %d\n", i)
		fmt.Fprintf(&want, "record %d\n", i)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, n := out.get()
		if s == want.String() {
			if n != 2 {
				t.Errorf("100 records held: written in %d writes, want 1", n-1)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the held records were not written: %q", s)
		}
		time.Sleep(time.Millisecond)
	}
	lw.Write([]byte("held\n"))
	lw.Close()
	lw.Write([]byte("after close\n"))
	if s, _ := out.get(); !strings.HasSuffix(s, "held\nafter close\n") {
		t.Errorf("after Close: %q", s)
	}
}

// TestLogWriterBound: no more than LogBufferSize bytes are held; a record
// larger than that is written whole, after the ones before it.
func TestLogWriterBound(t *testing.T) {
	var out lockedBuffer
	lw := NewLogWriter(&out)
	defer lw.Close()
	rec := []byte(strings.Repeat("x", 1023) + "\n")
	for range 3 * LogBufferSize / len(rec) {
		lw.Write(rec)
	}
	s, _ := out.get()
	if held := 3*LogBufferSize - len(s); held > LogBufferSize {
		t.Errorf("%d bytes held, more than %d", held, LogBufferSize)
	}
	big := []byte(strings.Repeat("y", 2*LogBufferSize) + "\n")
	lw.Write(big)
	if s, _ := out.get(); len(s) != 3*LogBufferSize+len(big) || !strings.HasSuffix(s, string(big)) {
		t.Errorf("after a large record: %d bytes written, want %d ending with it", len(s), 3*LogBufferSize+len(big))
	}
}
