package broker

import (
	"errors"
	"html/template"
	"net/http"
	"strings"
)

// Handler serves the browser's side of a sign-in:
//   - GET /auth/start?id=ELICITATION: for a bound sign-in (see bound), the
//     confirmation page, shown only to a browser signed in as the
//     session's user (confirm.go); else, and on POST /auth/start from
//     that page, sets the sign-in's cookie (HttpOnly, SameSite=Lax,
//     Path=/callback) and redirects to the upstream;
//   - GET /callback: completes the sign-in (Callback) and shows a plain
//     success or failure page.
func (b *Broker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /auth/start", b.serveStart)
	mux.Handle("POST /auth/start", http.NewCrossOriginProtection().Handler(http.HandlerFunc(b.serveConfirm)))
	mux.HandleFunc("GET /callback", b.serveCallback)
	return mux
}

func (b *Broker) serveStart(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if b.confirmFirst(w, r, id) {
		return
	}
	b.startAndRedirect(w, r, id, "")
}

// startAndRedirect starts the sign-in id (Start) for a browser signed in
// as signedIn and sends it to the upstream, or shows why not.
func (b *Broker) startAndRedirect(w http.ResponseWriter, r *http.Request, id, signedIn string) {
	st, err := b.Start(r.Context(), id, signedIn)
	if err != nil {
		status := http.StatusBadRequest
		msg := "This sign-in link cannot be used: " + err.Error() + "."
		if errors.Is(err, ErrNotYours) {
			status, msg = http.StatusForbidden, notYoursMessage
		} else if !errors.Is(err, ErrUnknownSignIn) && !errors.Is(err, ErrExpired) {
			b.log.Error("broker: cannot start a sign-in", "err", err)
			status, msg = http.StatusInternalServerError, "The sign-in cannot start now. Try again later."
		}
		page(w, status, "Sign-in failed", msg)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: st.CookieName, Value: st.CookieValue, Path: "/callback", Expires: st.Expires,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(b.opts.Origin, "https:")})
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	status := http.StatusFound
	if r.Method == http.MethodPost {
		status = http.StatusSeeOther
	}
	http.Redirect(w, r, st.Redirect, status)
}

func (b *Broker) serveCallback(w http.ResponseWriter, r *http.Request) {
	done, err := b.Callback(r.Context(), r.URL.Query(), func(name string) string {
		if c, err := r.Cookie(name); err == nil {
			return c.Value
		}
		return ""
	})
	var ce *CallbackError
	switch {
	case errors.As(err, &ce):
		page(w, http.StatusBadRequest, "Sign-in failed", ce.Message)
	case err != nil:
		b.log.Error("broker: cannot complete a sign-in", "err", err)
		page(w, http.StatusInternalServerError, "Sign-in failed", "The sign-in cannot complete now. Ask the agent for a new link later.")
	default:
		page(w, http.StatusOK, "Signed in", "You are signed in to "+done.Upstream.Label+". You can close this window and return to the agent.")
	}
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1><p>{{.Message}}</p></body></html>
`))

// page writes a plain HTML page; the template escapes every value.
func page(w http.ResponseWriter, status int, title, message string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'")
	w.WriteHeader(status)
	pageTemplate.Execute(w, struct{ Title, Message string }{title, message})
}
