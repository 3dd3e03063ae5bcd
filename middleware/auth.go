package middleware

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
)

// MaxAuthWarnedHosts bounds how many distinct hosts one Auth layer
// remembers having warned about, so that a client sent to ever new hosts
// cannot grow its memory without end. Once the set is full, one last WARN
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

// Auth returns the middleware that sends cred to one host only: it sets the
// Authorization header on a copy of a request whose URL host
// (req.URL.Host, host[:port] as written in the URL) equals host, byte for
// byte. The comparison is exact: it ignores neither case
// ("Billing.internal" is not "billing.internal") nor default ports
// ("billing.internal:443" is not "billing.internal"), so write auth.host as
// the URLs spell it; a mismatch fails closed, and its WARN names both
// spellings. The Host header (req.Host) plays no part: the credential
// follows where the connection goes.
//
// A request to any other host gets no credential, and the first such
// request to each distinct host logs one WARN to ev.Logger naming the
// client, auth.host and the request's host (never the credential); at most
// MaxAuthWarnedHosts hosts are remembered. http.Client runs the transport
// again for every redirect hop, so a redirect to another host is such a
// request. The layer never adds a credential to a request that was not
// sent to host, and never removes or replaces an Authorization header the
// caller set: that one is the caller's, and http.Client itself decides
// whether to copy it to a redirect (it does only for the same domain or a
// subdomain, ignoring the port).
//
// Auth returns nil (no layer, no cost) when cred is zero. The caller's
// request is never changed: the copy shares its body and context and gets
// its own header map. The returned middleware is safe for concurrent use;
// every RoundTripper it makes shares the set of warned hosts.
func Auth(host string, cred Credential, ev *Events) Middleware {
	value := cred.header()
	if value == "" {
		return nil
	}
	a := &authLayer{host: host, value: []string{value}, ev: ev}
	return func(next http.RoundTripper) http.RoundTripper {
		return RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL == nil || req.URL.Host != a.host {
				if req.URL != nil {
					a.warn(req.Context(), req.URL.Host)
				}
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
	host  string
	value []string // the Authorization header value
	ev    *Events
	// warned holds the hosts already warned about (lock-free reads on the
	// path of every request to another host); n counts them.
	warned sync.Map
	n      atomic.Int64
	full   atomic.Bool
}

// warn logs the one WARN for a request to host, the first time.
func (a *authLayer) warn(ctx context.Context, host string) {
	if _, ok := a.warned.Load(host); ok || a.full.Load() {
		return
	}
	if a.n.Load() >= MaxAuthWarnedHosts {
		if a.full.CompareAndSwap(false, true) {
			a.log(ctx, "credential withheld from more hosts than are remembered; no further hosts are reported",
				slog.Int("max_hosts", MaxAuthWarnedHosts))
		}
		return
	}
	if _, loaded := a.warned.LoadOrStore(host, struct{}{}); loaded {
		return
	}
	a.n.Add(1)
	a.log(ctx, "credential withheld: request host is not auth.host",
		slog.String("auth_host", a.host), slog.String("host", host))
}

func (a *authLayer) log(ctx context.Context, msg string, attrs ...slog.Attr) {
	if a.ev == nil || a.ev.Logger == nil || !a.ev.Logger.Enabled(ctx, slog.LevelWarn) {
		return
	}
	attrs = append(attrs, slog.String("client", a.ev.Client))
	a.ev.Logger.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}
