package commands

import (
	"bytes"
	"io"
	"regexp"
	"sync"
)

// ansiEscape matches terminal escape sequences: CSI (ESC [ … final), OSC
// (ESC ] … BEL or ST) and two-byte escapes. Agents such as gemini-cli
// switch to the alternate screen before printing a sign-in URL.
var ansiEscape = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("\x1b(?:\\[[0-?]*[ -/]*[@-~]|\\][^\x07\x1b]*(?:\x07|\x1b\\\\)|[@-Z\\\\-_])")
})

// maxAgentLine bounds one line of agent output kept before it is printed.
const maxAgentLine = 4096

// agentOutput is a writer for what an agent prints (a stdio child's
// stderr, its stdout lines that are not JSON): each line is printed on w
// with escape sequences and control characters removed (safeText), blank
// lines dropped; Flush prints a last line without its newline (a prompt).
// Safe for concurrent use.
func agentOutput(w io.Writer) *agentWriter { return &agentWriter{w: w} }

type agentWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (a *agentWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			a.buf = append(a.buf, p...)
			if len(a.buf) > maxAgentLine {
				a.flush()
			}
			break
		}
		a.buf = append(a.buf, p[:i]...)
		a.flush()
		p = p[i+1:]
	}
	return n, nil
}

// Flush prints what is left of a line without its newline.
func (a *agentWriter) Flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.flush()
}

func (a *agentWriter) flush() {
	line := safeText(ansiEscape().ReplaceAllString(string(a.buf), ""))
	a.buf = a.buf[:0]
	if len(bytes.TrimSpace([]byte(line))) > 0 {
		io.WriteString(a.w, line+"\n")
	}
}
