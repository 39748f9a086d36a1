package issuer

import (
	"embed"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentauth/agentauth/internal/webpage"
)

//go:embed templates/*.html
var templateFS embed.FS

// parsePages parses the issuer's pages on the shared layout (package
// webpage), so the issuer and the broker look alike; devLogin says whether
// they show the development "Sign in as" box (no login provider).
func parsePages(devLogin bool) (*template.Template, error) {
	t, err := webpage.Parse(nil)
	if err != nil {
		return nil, err
	}
	return t.Funcs(template.FuncMap{"devLogin": func() bool { return devLogin }}).ParseFS(templateFS, "templates/*.html")
}

// scopeLine is a scope on a consent or device page with what the
// operator says it allows (Options.ScopeDescriptions; "" for none).
type scopeLine struct{ Name, Description string }

// scopeLines describes each scope of a space-separated scope string.
func (i *Issuer) scopeLines(scope string) []scopeLine {
	var out []scopeLine
	for _, s := range strings.Fields(scope) {
		out = append(out, scopeLine{Name: s, Description: i.opts.ScopeDescriptions[s]})
	}
	return out
}

// verified says whether the client's name was set by the operator (a
// pre-registered client): a name a client registered itself (RFC 7591
// §2: client_name is self-asserted) or published in its own metadata
// document is shown marked as unverified.
func (i *Issuer) verified(c *client) bool { return i.static[c.id] == c }

// consentPage feeds templates/consent.html. Every field may come from a
// request; html/template escapes them. The OAuth state is not shown: it is
// the client's opaque value, not something the user can judge.
type consentPage struct {
	ClientName  string
	ClientID    string
	Unverified  bool
	Scopes      []scopeLine
	Resource    string
	RedirectURI string
	Subject     string
	// SignedIn: Subject is who the browser signed in as at the login
	// provider, shown, not editable.
	SignedIn bool
	Nonce    string
}

// devicePage feeds templates/device.html: the user code entry form, or
// with Nonce set, the confirmation form.
type devicePage struct {
	UserCode   string
	Error      string
	ClientName string
	ClientID   string
	Unverified bool
	Scopes     []scopeLine
	Resource   string
	Subject    string
	SignedIn   bool
	Nonce      string
}

// messagePage feeds templates/message.html.
type messagePage struct {
	Title   string
	Message string
}

// render writes a page (package webpage: headers, a clean 500 when the
// template fails). Pages need no script, and may not be framed.
func (i *Issuer) render(w http.ResponseWriter, status int, name string, data any) {
	if err := webpage.Render(w, status, i.pages, name, data); err != nil {
		i.log.Error("issuer: cannot render page", "page", name, "err", err)
	}
}

func (i *Issuer) errorPage(w http.ResponseWriter, status int, message string) {
	i.render(w, status, "message.html", messagePage{Title: errorTitle, Message: message})
}

// readPageForm reads a bounded consent or device form post.
func (i *Issuer) readPageForm(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		i.errorPage(w, http.StatusBadRequest, "Cannot read the form.")
		return nil, false
	}
	return r.PostForm, true
}

// readDecision reads Approve/Deny and, to approve, the user: with a
// login provider, whom the browser signed in as; with the development box,
// the name typed.
func (i *Issuer) readDecision(w http.ResponseWriter, r *http.Request, form url.Values) (approve bool, subject string, ok bool) {
	switch form.Get("decision") {
	case "deny":
		return false, "", true
	case "approve":
		if i.login != nil {
			s, in := i.SignedIn(r)
			if !in {
				i.errorPage(w, http.StatusForbidden, "You are no longer signed in. Start again from your application.")
				return false, "", false
			}
			return true, s, true
		}
		subject = strings.TrimSpace(form.Get("subject"))
		if err := checkSubject(subject); err != nil {
			i.errorPage(w, http.StatusBadRequest, "Cannot approve: "+err.Error()+". Go back and correct it.")
			return false, "", false
		}
		return true, subject, true
	default:
		i.errorPage(w, http.StatusBadRequest, "Choose Approve or Deny.")
		return false, "", false
	}
}

// loginPage feeds templates/login.html: the development "Sign in as" box.
type loginPage struct {
	Subject  string
	ReturnTo string
}
