// Package webpage is the one look of every HTML page serve shows a
// browser: the embedded issuer's consent, device and message pages and
// the broker's sign-in pages. It owns the layout (lang, viewport, the
// stylesheet), the message page, and the response headers of a page (no
// script, no framing, no caching, no referrer). It imports nothing of
// agentauth's.
//
// A page template starts with {{template "page-start" TITLE}} and ends
// with {{template "page-end" NOTE}} (NOTE may be "": no footnote).
package webpage

import (
	"bytes"
	_ "embed"
	"html/template"
	"io/fs"
	"net/http"
	"sync"
)

//go:embed layout.html
var layout string

// Parse returns the layout with the templates of fsys matching patterns
// (none: the layout and the message page only).
func Parse(fsys fs.FS, patterns ...string) (*template.Template, error) {
	t, err := template.New("layout").Parse(layout)
	if err != nil || len(patterns) == 0 {
		return t, err
	}
	return t.ParseFS(fsys, patterns...)
}

// base is the layout and the message page, parsed on first use: only
// serve shows pages, and every other command would pay for the parse at
// start-up.
var base = sync.OnceValue(func() *template.Template { return template.Must(Parse(nil)) })

// Detail is one labelled value of a message page; Code shows it as code.
type Detail struct {
	Label, Value string
	Code         bool
}

// Message is the data of the message page: a title, a lead sentence
// (Class "error" or "ok" colours it), labelled details, the next step for
// the user and a footnote. Every field is escaped.
type Message struct {
	Title   string
	Lead    string
	Class   string
	Details []Detail
	Next    string
	Note    string
}

// ContentSecurityPolicy allows the layout's inline style and nothing else.
const ContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"

// Render executes the template name of t into a buffer (so a failure is a
// clean 500 and returns the error for the caller's log) and writes it
// with the page headers.
func Render(w http.ResponseWriter, status int, t *template.Template, name string, data any) error {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "cannot render page", http.StatusInternalServerError)
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteMessage writes a message page.
func WriteMessage(w http.ResponseWriter, status int, m Message) error {
	return Render(w, status, base(), "webpage-message", m)
}
