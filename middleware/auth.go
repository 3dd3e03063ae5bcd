package middleware

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// MaxAuthWarnedHosts bounds how many distinct hosts (for Headers, pairs of
// hosts) one Auth or Headers layer remembers having warned about, so that
// a client sent to ever new hosts cannot grow its memory without end. Once the set is full, one last WARN
// says so and further hosts get no WARN of their own.
const MaxAuthWarnedHosts = 1024

// Credential is a resolved credential: the secret values themselves (a file
// named by the config has already been read and trimmed). Bearer, when not
// empty, is sent as "Authorization: Bearer <Bearer>"; otherwise Username and
// Password, when either is set, are sent as HTTP basic credentials. The zero
// value is no credential.
//
// A Credential never prints its secrets: String, GoString, Format (every
// fmt verb), LogValue (slog) and MarshalJSON show only which kind it is and
// Redacted. A Credential is a plain value, safe for concurrent reads.
type Credential struct {
	Bearer   string
	Username string
	Password string
}

// IsZero reports whether c holds no credential.
func (c Credential) IsZero() bool { return c.Bearer == "" && c.Username == "" && c.Password == "" }

// String returns a redacted description: "Credential{}" for none,
// "Credential{bearer: REDACTED}" or "Credential{basic: REDACTED}".
func (c Credential) String() string {
	switch {
	case c.Bearer != "":
		return "Credential{bearer: " + Redacted + "}"
	case c.IsZero():
		return "Credential{}"
	default:
		return "Credential{basic: " + Redacted + "}"
	}
}

// GoString returns String, so that %#v prints no secret either.
func (c Credential) GoString() string { return c.String() }

// Format writes String for every verb and flag, so that no fmt verb (%v,
// %+v, %#v, %s, %q, %x, %d …) prints a secret.
func (c Credential) Format(f fmt.State, _ rune) { _, _ = fmt.Fprint(f, c.String()) }

// LogValue returns String as a slog value.
func (c Credential) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON encodes String as a JSON string.
func (c Credential) MarshalJSON() ([]byte, error) { return fmt.Appendf(nil, "%q", c.String()), nil }

// MarshalText returns String, so that every encoder that honours
// encoding.TextMarshaler (YAML, XML, flag sets) shows no secret either.
func (c Credential) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// AuthOptions are the code-only parts of the auth layer. The zero value
// sends the credential AuthSettings holds (BearerToken, Basic) and emits no
// events.
type AuthOptions struct {
	// Credential, when not zero, is sent in place of the one in the
	// settings: the factory resolves the *_file keys into it (files read
	// and trimmed), so that a rotated token reaches the layer.
	Credential Credential
	// Events receives the WARN about requests to other hosts; nil = none.
	Events *Events
}

// header returns the Authorization value of c, or "" when c is zero.
func (c Credential) header() string {
	switch {
	case c.Bearer != "":
		return "Bearer " + c.Bearer
	case c.IsZero():
		return ""
	default:
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.Username+":"+c.Password))
	}
}

// Auth returns the middleware that sends the credential (o.Credential, or
// the one s holds) to one origin only: it sets the Authorization header on
// a copy of a request whose URL names the host and port of s.Host, and
// whose scheme is the scheme the logical call first used for that host.
//
// s.Host (host below) is a bare host[:port] as in request URLs ("billing.internal:8443",
// "api.example.com", "[::1]:8443"); it has no scheme. A request matches when
//   - its URL host name equals host's, ignoring case
//     ("API.Example.com" is "api.example.com"), and exactly: no subdomain,
//     suffix or trailing dot matches; and
//   - its port, written or implied by its scheme (https 443, http 80),
//     equals host's port; a host without a port means the default port of
//     the request's scheme. So host "api.example.com:443" matches
//     https://api.example.com/ and host "api.example.com" matches
//     https://api.example.com:443/ and http://api.example.com/, but not
//     https://api.example.com:8443/ nor http://api.example.com:443/.
//
// The scheme is pinned per logical call: http.Client runs the transport
// again for every redirect hop and links each hop to the previous one
// (req.Response.Request), and the first request of that chain to host
// fixes the scheme. A later hop to host over another scheme gets no
// credential: a redirect from https://h/ to http://h/ (a downgrade on the
// same host:port, curl's rule since CVE-2022-27774) and, as in curl, from
// http://h/ to https://h/ as well. A call that starts with http://h/ gets the
// credential, since host names no scheme. A redirect whose previous hop is
// unknown (a Response without a Request) gets none: the layer fails closed.
// The Host header (req.Host) plays no part: the credential follows where
// the connection goes.
//
// A request to any other origin gets no credential, and the first such
// request to each distinct host (or host and scheme change) logs one WARN
// to ev.Logger naming the client, auth.host and the request's host (never
// the credential); at most MaxAuthWarnedHosts are remembered. A redirect
// to another host is such a request. The layer never adds a credential to
// a request that was not sent to host, and never removes or replaces an
// Authorization header the caller set: that one is the caller's, and
// http.Client itself decides whether to copy it to a redirect (it does only
// for the same domain or a subdomain, ignoring the port).
//
// Auth returns the identity (no layer, no cost) when the credential is
// zero. The caller's request is never changed: the copy shares its body and
// context and gets its own header map. The returned middleware is safe for
// concurrent use; every RoundTripper it makes shares the set of warned
// hosts.
func Auth(s AuthSettings, o AuthOptions) Middleware {
	cred := o.Credential
	if cred.IsZero() {
		cred = Credential{Bearer: s.BearerToken.Reveal(), Username: s.Basic.Username, Password: s.Basic.Password.Reveal()}
	}
	value := cred.header()
	if value == "" {
		return identity
	}
	host := s.Host
	a := &authLayer{host: host, value: []string{value}, warn: warnOnce{ev: o.Events}}
	a.name, a.port = splitAuthHost(host)
	return func(next http.RoundTripper) http.RoundTripper {
		return RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if !a.matches(req.URL) {
				if req.URL != nil {
					a.warnHost(req.Context(), req.URL.Host)
				}
				return next.RoundTrip(req)
			}
			if from, ok := a.firstScheme(req); !ok || !strings.EqualFold(from, req.URL.Scheme) {
				a.warnScheme(req.Context(), req.URL, from)
				return next.RoundTrip(req)
			}
			if _, ok := req.Header["Authorization"]; ok {
				return next.RoundTrip(req) // the caller's own credential wins
			}
			r2 := new(http.Request)
			*r2 = *req
			r2.Header = req.Header.Clone()
			if r2.Header == nil {
				r2.Header = make(http.Header, 1)
			}
			// The value slice is shared and never written to (see Headers).
			r2.Header["Authorization"] = a.value
			return next.RoundTrip(r2)
		})
	}
}

// authLayer is the shared state of one Auth middleware.
type authLayer struct {
	host  string   // auth.host as configured, for logs
	name  string   // its host name, without brackets
	port  string   // its port; "" = the default port of the request's scheme
	value []string // the Authorization header value
	warn  warnOnce
}

// warnOnce logs each WARN about a withheld credential once per key (a host,
// or a pair of hosts), remembering at most MaxAuthWarnedHosts keys. Auth
// and Headers share it: one rule, one way of saying it was applied. The
// zero value logs nothing; it is safe for concurrent use.
type warnOnce struct {
	ev *Events
	// warned holds the keys already warned about (lock-free reads on the
	// path of every request whose credential is withheld); n counts them.
	warned sync.Map
	n      atomic.Int64
	full   atomic.Bool
}

// splitAuthHost splits a bare host[:port] into its host name (brackets
// of an IPv6 literal removed) and port.
func splitAuthHost(host string) (name, port string) {
	u := url.URL{Host: host}
	return u.Hostname(), u.Port()
}

// defaultPort returns the port a URL of scheme implies, or "".
func defaultPort(scheme string) string {
	switch {
	case strings.EqualFold(scheme, "https"):
		return "443"
	case strings.EqualFold(scheme, "http"):
		return "80"
	}
	return ""
}

// matches reports whether u names the pinned host and port. It does not
// allocate.
func (a *authLayer) matches(u *url.URL) bool {
	if u == nil || !strings.EqualFold(u.Hostname(), a.name) {
		return false
	}
	implied := defaultPort(u.Scheme)
	port := u.Port()
	if port == "" {
		port = implied
	}
	if a.port == "" {
		return port != "" && port == implied
	}
	return port == a.port
}

// firstScheme returns the scheme of the earliest request to the pinned
// host in req's redirect chain (req's own when it is no redirect). ok is
// false when the chain is broken (see Redirects).
func (a *authLayer) firstScheme(req *http.Request) (scheme string, ok bool) {
	scheme = req.URL.Scheme
	if _, _, ok = walkRedirects(req, func(r *http.Request) {
		if a.matches(r.URL) {
			scheme = r.URL.Scheme
		}
	}); !ok {
		return "", false
	}
	return scheme, true
}

// warnHost logs the one WARN for a request to another host, the first time.
func (a *authLayer) warnHost(ctx context.Context, host string) {
	if !a.warn.first(ctx, host) {
		return
	}
	a.warn.log(ctx, "credential withheld: request host is not auth.host",
		slog.String("auth_host", a.host), slog.String("host", host))
}

// warnScheme logs the one WARN for a redirect to the pinned host that
// changed the scheme from from ("" = unknown), the first time.
func (a *authLayer) warnScheme(ctx context.Context, u *url.URL, from string) {
	if !a.warn.enabled(ctx) || !a.warn.first(ctx, from+">"+u.Scheme+"://"+u.Host) {
		return
	}
	if from == "" {
		from = "unknown"
	}
	a.warn.log(ctx, "credential withheld: redirect changed the scheme",
		slog.String("auth_host", a.host), slog.String("host", u.Host),
		slog.String("from_scheme", from), slog.String("scheme", u.Scheme))
}

// enabled reports whether a WARN would be logged at all.
func (w *warnOnce) enabled(ctx context.Context) bool {
	return w.ev != nil && w.ev.Logger != nil && w.ev.Logger.Enabled(ctx, slog.LevelWarn)
}

// first reports whether key is new to the warned set, and adds it; once
// the set is full it logs that once and reports false.
func (w *warnOnce) first(ctx context.Context, key string) bool {
	if _, ok := w.warned.Load(key); ok || w.full.Load() {
		return false
	}
	if w.n.Load() >= MaxAuthWarnedHosts {
		if w.full.CompareAndSwap(false, true) {
			w.log(ctx, "credential withheld from more hosts than are remembered; no further hosts are reported",
				slog.Int("max_hosts", MaxAuthWarnedHosts))
		}
		return false
	}
	if _, loaded := w.warned.LoadOrStore(key, struct{}{}); loaded {
		return false
	}
	w.n.Add(1)
	return true
}

// log writes one WARN with the client's name.
func (w *warnOnce) log(ctx context.Context, msg string, attrs ...slog.Attr) {
	if !w.enabled(ctx) {
		return
	}
	attrs = append(attrs, slog.String("client", w.ev.Client))
	w.ev.Logger.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}
