package broker

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentauth/agentauth/internal/webpage"
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
	handled, who := b.confirmFirst(w, r, id)
	if handled {
		return
	}
	b.startAndRedirect(w, r, id, who)
}

// startAndRedirect starts the sign-in id (Start) for a browser signed in
// as signedIn and sends it to the upstream, or shows why not.
func (b *Broker) startAndRedirect(w http.ResponseWriter, r *http.Request, id, signedIn string) {
	st, err := b.Start(r.Context(), id, signedIn)
	if err != nil {
		m := webpage.Message{Title: "Sign-in link not usable", Class: "error", Next: askAgain}
		switch {
		case errors.Is(err, ErrUnknownSignIn):
			m.Lead = "This sign-in link is unknown or was already used: each link opens once."
		case errors.Is(err, ErrNotYours):
			b.page(w, http.StatusForbidden, notYoursPage)
			return
		case errors.Is(err, ErrExpired):
			m.Title, m.Lead = "Sign-in link expired", "This sign-in link expired before it was opened."
		default:
			b.log.Error("broker: cannot start a sign-in", "err", err)
			m.Title, m.Lead, m.Next = "Sign-in unavailable", "The sign-in cannot start now.", "Try again in a moment: "+askAgain
			b.page(w, http.StatusInternalServerError, m)
			return
		}
		b.page(w, http.StatusBadRequest, m)
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

// askAgain is the next step of a sign-in that cannot go on.
const askAgain = "Run the agent's command again (for example agentauth call …) and open the new link it prints."

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
		next := ce.Next
		if next == "" {
			next = askAgain
		}
		b.page(w, http.StatusBadRequest, webpage.Message{Title: "Sign-in not completed", Lead: ce.Message, Class: "error", Next: next})
	case err != nil:
		b.log.Error("broker: cannot complete a sign-in", "err", err)
		b.page(w, http.StatusInternalServerError, webpage.Message{Title: "Sign-in not completed", Class: "error",
			Lead: "The sign-in cannot complete now.", Next: "Try again in a moment: " + askAgain})
	default:
		u := done.Upstream
		m := webpage.Message{Title: "Signed in to " + u.Label, Class: "ok",
			Lead: "The agent can now use " + u.Label + " on your behalf in this session.",
			Next: "You can close this window and return to the agent."}
		if done.Account != "" {
			m.Details = append(m.Details, webpage.Detail{Label: "Account", Value: done.Account})
		}
		m.Details = append(m.Details,
			webpage.Detail{Label: "Signed in to", Value: u.Label + " (" + u.Host() + ")"},
			webpage.Detail{Label: "Session", Value: done.Session, Code: true})
		b.page(w, http.StatusOK, m)
	}
}

// page writes a sign-in page in the look every serve page shares
// (package webpage); the template escapes every value.
func (b *Broker) page(w http.ResponseWriter, status int, m webpage.Message) {
	m.Note = "agentauth: " + b.opts.Origin + " signs you in to upstream services for your agent; the tokens stay on the server."
	if err := webpage.WriteMessage(w, status, m); err != nil {
		b.log.Error("broker: cannot render page", "err", err)
	}
}
