package broker

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/agentauth/agentauth/internal/webpage"
	"github.com/agentauth/agentauth/state"
)

// A bound sign-in link opens only in a browser signed in, at serve's
// embedded issuer, as the user of the session that asked for it, and only
// after that user confirmed on a page naming the client, the session, the
// upstream and the scopes (a POST carrying a token derived from the link
// and the user, on top of the cross-origin check). Anyone else is refused
// with a page saying why, and the link stays usable by its user: opening
// it cannot put another upstream account on the session.

// notYoursPage is the page shown to a browser signed in as another user.
var notYoursPage = webpage.Message{Title: "Not your sign-in link", Class: "error",
	Lead: "This sign-in link was made for another user's session, and this browser is signed in to this server as someone else. Nothing was changed.",
	Next: "Open the link in the browser where you signed in as the agent's user, or ask your agent for a link of your own."}

// maxConfirmForm bounds the confirmation form's body.
const maxConfirmForm = 4 << 10

// bound says whether the sign-in p is bound to its session's user: serve
// has a browser login (Options.Browser), and the session's token came
// from the issuer whose subjects that login vouches for.
func (b *Broker) bound(p *pendingRecord) bool {
	return b.opts.Browser != nil && p.Subject != "" && p.Issuer == b.opts.Browser.Origin()
}

// viewPending reads the pending sign-in id without spending it; nil when
// unknown or expired.
func (b *Broker) viewPending(ctx context.Context, id string) (*pendingRecord, error) {
	var p *pendingRecord
	err := b.opts.Store.View(ctx, func(tx state.Tx) error {
		var err error
		p, err = getJSON[pendingRecord](tx, kindPending, id)
		return err
	})
	if err != nil || p == nil || !b.now().Before(p.Expires) {
		return nil, err
	}
	return p, nil
}

// confirmFirst answers GET /auth/start for a bound sign-in and reports
// whether it did: a browser not signed in goes through the issuer's login
// and back; one signed in as another user is refused (403); the
// session's user gets the confirmation page, or with Options.AutoConfirm
// goes on at once (who is then the user). Unknown, expired and unbound
// sign-ins are left to startAndRedirect.
func (b *Broker) confirmFirst(w http.ResponseWriter, r *http.Request, id string) (handled bool, who string) {
	p, err := b.viewPending(r.Context(), id)
	if err != nil {
		b.log.Error("broker: cannot read a sign-in", "err", err)
		b.page(w, http.StatusInternalServerError, webpage.Message{Title: "Sign-in unavailable", Class: "error",
			Lead: "The sign-in cannot start now.", Next: "Try again in a moment: " + askAgain})
		return true, ""
	}
	if p == nil || !b.bound(p) {
		return false, ""
	}
	who, ok := b.opts.Browser.SignedIn(r)
	if ok && who == p.Subject && b.opts.AutoConfirm {
		return false, who
	}
	switch {
	case !ok:
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.Redirect(w, r, b.opts.Browser.SignInURL("/auth/start?"+url.Values{"id": {id}}.Encode()), http.StatusFound)
		return true, ""
	case who != p.Subject:
		b.log.Warn("broker: sign-in refused", "upstream", p.Upstream, "elicitation", LogID(id), "reason", "the browser is not signed in as the session's user")
		b.page(w, http.StatusForbidden, notYoursPage)
		return true, ""
	}
	u := b.upstreams[p.Upstream]
	if u == nil {
		return false, "" // Start says the upstream is gone
	}
	client := p.ClientID
	if b.opts.ClientName != nil {
		if name := b.opts.ClientName(r.Context(), p.ClientID); name != "" && name != p.ClientID {
			client = name + " (client " + p.ClientID + ")"
		}
	}
	data := confirmPage{User: who, Client: client, Session: p.Session, Upstream: u.Label, Host: u.Host(), Scopes: u.Scopes,
		Expires: p.Expires.UTC().Format(time.RFC1123), ID: id, Token: b.confirmToken(id, who)}
	data.Note = "agentauth: " + b.opts.Origin + " signs you in to upstream services for your agent; the tokens stay on the server."
	if err := webpage.Render(w, http.StatusOK, confirmTemplate(), "broker-confirm", data); err != nil {
		b.log.Error("broker: cannot render page", "err", err)
	}
	return true, ""
}

// serveConfirm is POST /auth/start from the confirmation page: with a
// valid token for this link and this browser's user, the sign-in starts.
func (b *Broker) serveConfirm(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxConfirmForm)
	if err := r.ParseForm(); err != nil {
		b.page(w, http.StatusBadRequest, webpage.Message{Title: "Sign-in not started", Class: "error",
			Lead: "Cannot read the form.", Next: "Open the sign-in link again."})
		return
	}
	id := r.PostForm.Get("id")
	var who string
	if b.opts.Browser != nil {
		who, _ = b.opts.Browser.SignedIn(r)
	}
	if who == "" || !hmac.Equal([]byte(r.PostForm.Get("token")), []byte(b.confirmToken(id, who))) {
		b.log.Warn("broker: sign-in refused", "elicitation", LogID(id), "reason", "the confirmation does not match this browser's user")
		b.page(w, http.StatusForbidden, webpage.Message{Title: "Sign-in not started", Class: "error",
			Lead: "This confirmation is not valid for this browser.", Next: "Open the sign-in link the agent gave you again."})
		return
	}
	b.startAndRedirect(w, r, id, who)
}

// confirmToken ties a confirmation to the link id and the user it was
// shown to (HMAC under the broker's key): the anti-CSRF token of the form.
func (b *Broker) confirmToken(id, who string) string {
	m := hmac.New(sha256.New, b.sidKey)
	m.Write([]byte("confirm\x00" + id + "\x00" + who))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// confirmPage feeds confirmTemplate.
type confirmPage struct {
	User, Client, Session, Upstream, Host string
	Scopes                                []string
	Expires, ID, Token, Note              string
}

// confirmTemplate is the confirmation page, in the look of every page
// of serve (package webpage); parsed on first use, not at every command's
// start-up.
var confirmTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.Must(webpage.Parse(nil)).New("broker-confirm").Parse(`{{template "page-start" (print "Connect " .Upstream)}}
<p>You are signed in as <strong>{{.User}}</strong>. Your agent asks to sign your session in to <strong>{{.Upstream}}</strong> so that it can call it as you.</p>
<dl>
<dt>Client</dt>
<dd>{{.Client}}</dd>
<dt>Session</dt>
<dd><code>{{.Session}}</code></dd>
<dt>Upstream</dt>
<dd>{{.Upstream}} at <code>{{.Host}}</code></dd>
<dt>Scopes</dt>
<dd>{{range .Scopes}}<code>{{.}}</code> {{else}}the upstream's default{{end}}</dd>
<dt>Link valid until</dt>
<dd>{{.Expires}}</dd>
</dl>
<form method="post" action="/auth/start">
<input type="hidden" name="id" value="{{.ID}}">
<input type="hidden" name="token" value="{{.Token}}">
<p><button>Continue to {{.Upstream}}</button></p>
</form>
<p class="next">If you did not ask your agent for this, close this page: nothing happens.</p>
{{template "page-end" .Note}}`))
})
