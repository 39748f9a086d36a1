package ops

import (
	"html/template"
	"net/http"
	"sync"

	"al.essio.dev/pkg/shellescape"
)

// Landing describes the server on its landing page.
type Landing struct {
	// Version is the server's version.
	Version string
	// Resource is the MCP endpoint (the resource identifier).
	Resource string
	// Links are the metadata documents, by title.
	Links []Link
}

// Link is one link of the landing page.
type Link struct{ Title, URL string }

// landingPage is parsed on first use (only serve shows it; a CLI command
// would pay for the parse at start-up).
var landingPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("landing").Funcs(template.FuncMap{"shellquote": shellescape.Quote}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>agentauth</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>
<h1>agentauth {{.Version}}</h1>
<p>This is an agentauth agent host: an MCP server at <code>{{.Resource}}</code>, an agent host
over WebSocket on this address, and the authorization metadata below. It is meant for
agents and command-line clients, not browsers. To sign in from a terminal, run:</p>
<pre>agentauth login {{shellquote .Resource}}</pre>
<ul>
{{range .Links}}<li><a href="{{.URL}}">{{.Title}}</a></li>
{{end}}<li><a href="/healthz">/healthz</a> and <a href="/readyz">/readyz</a></li>
</ul>
</body></html>
`))
})

// LandingHandler serves the landing page; other handlers keep their
// routes (the caller sends WebSocket upgrades elsewhere).
func LandingHandler(l Landing) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		landingPage().Execute(w, l)
	})
}
