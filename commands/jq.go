package commands

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/itchyny/gojq"
	"github.com/urfave/cli/v2"
)

// jqFlag is --jq, which NewApp adds to every command that has --json.
// As in gh (pkg/cmdutil/json_flags.go), --jq filters the JSON the
// command prints, each result on a line: a string raw, anything else as
// JSON (indented on a terminal, compact in a pipe). --jq without --json
// is a usage error, as in gh; an expression that does not compile or
// fails on the output is one too (exit 2).
var jqFlag = &cli.StringFlag{Name: "jq", Usage: "filter the --json output with a jq `EXPRESSION` (gojq): strings print raw, one result a line"}

// withJQ wraps the Action of a command that has --json: with --jq, the
// command's stdout goes through the compiled expression.
func withJQ(f *Factory, action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		expr := c.String("jq")
		if !c.IsSet("jq") {
			return action(c)
		}
		if !c.Bool("json") {
			return usageErrorf("cannot use --jq without --json")
		}
		code, err := compileJQ(expr)
		if err != nil {
			return err
		}
		out := f.IO.Out
		jw := newJQWriter(c.Context, code, out, f.IO.StdoutTTY)
		f.IO.Out = jw
		err = action(c)
		f.IO.Out = out
		if jerr := jw.Close(); err == nil {
			err = jerr
		}
		return err
	}
}

// compileJQ parses and compiles expr; either failure is a usage error.
func compileJQ(expr string) (*gojq.Code, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, usageErrorf("--jq needs an expression, for example --jq '.usable'")
	}
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, usageErrorf("invalid --jq expression: %v", err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, usageErrorf("invalid --jq expression: %v", err)
	}
	return code, nil
}

// jqWriter is the stdout of a command run with --jq: a goroutine decodes
// each JSON document the command writes (one, or a stream of JSON lines
// with authenticate --watch) as it arrives and prints the expression's
// results, so a watching command's events still come out one by one.
type jqWriter struct {
	pw   *io.PipeWriter
	done chan error
}

func newJQWriter(ctx context.Context, code *gojq.Code, out io.Writer, indent bool) *jqWriter {
	pr, pw := io.Pipe()
	w := &jqWriter{pw: pw, done: make(chan error, 1)}
	go func() {
		err := runJQ(ctx, code, pr, out, indent)
		// Whatever the command still writes is dropped, never blocks it.
		pr.CloseWithError(errJQFailed)
		w.done <- err
	}()
	return w
}

var errJQFailed = errors.New("the --jq expression failed")

func (w *jqWriter) Write(p []byte) (int, error) { return w.pw.Write(p) }

// Close ends the input and returns the expression's first error.
func (w *jqWriter) Close() error {
	w.pw.Close()
	return <-w.done
}

// runJQ runs code on each JSON value read from r and prints the results
// to out.
func runJQ(ctx context.Context, code *gojq.Code, r io.Reader, out io.Writer, indent bool) error {
	dec := json.NewDecoder(r)
	dec.UseNumber() // gojq takes json.Number: large integers stay exact
	bw := bufio.NewWriter(out)
	defer bw.Flush()
	for {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("--jq: the output is not JSON: %w", err)
		}
		iter := code.RunWithContext(ctx, v)
		for {
			res, ok := iter.Next()
			if !ok {
				break
			}
			if err, isErr := res.(error); isErr {
				var halt *gojq.HaltError
				if errors.As(err, &halt) && halt.Value() == nil {
					return nil // halt: stop without an error, as jq does
				}
				return usageErrorf("the --jq expression failed: %v", err)
			}
			if err := writeJQResult(bw, res, indent); err != nil {
				return err
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
}

// writeJQResult prints one result: a string raw (gh and jq -r), anything
// else as JSON.
func writeJQResult(w io.Writer, v any, indent bool) error {
	if s, ok := v.(string); ok {
		_, err := fmt.Fprintln(w, s)
		return err
	}
	b, err := gojq.Marshal(v)
	if err != nil {
		return fmt.Errorf("--jq: cannot print a result: %w", err)
	}
	if indent {
		var buf bytes.Buffer
		if json.Indent(&buf, b, "", "  ") == nil {
			b = buf.Bytes()
		}
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
