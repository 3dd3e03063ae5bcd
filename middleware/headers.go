package middleware

import (
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// HeadersOptions are the code-only options of Headers. The zero value
// emits no events.
type HeadersOptions struct {
	// Events receives the WARN about credential headers withheld from a
	// redirect to another origin; nil = none.
	Events *Events
}

// Headers returns a middleware that sets each of h on a request that does not
// already carry that header; a header the caller set wins. Names are put in
// canonical form.
//
// A header that carries a credential (IsSensitiveHeader: Authorization,
// Proxy-Authorization, Cookie, X-Api-Key, …) is pinned to the origin of
// the call's first request, whatever host that is: it is set on the first
// request of a logical call, and on a redirect hop only when the hop goes
// to that request's origin (the same scheme, host name, ignoring case, and
// port, written or implied by the scheme). This is not Auth's rule: Auth
// pins its credential to the configured auth.host (on no request to
// another host, the first one included), with the scheme of the earliest
// request of the call to that host, so a call that starts on another host
// and is redirected to auth.host gets Auth's credential there but none of
// these headers. http.Client runs the transport again for every redirect
// hop and links each hop to the previous one (req.Response.Request); a hop
// to another origin, or whose chain is broken (see Redirects), gets no
// credential header from h, and the first such hop for each pair of
// hosts logs one WARN to o.Events naming the client, both hosts and the
// headers withheld (never their values); at most MaxAuthWarnedHosts pairs
// are remembered. The other headers of h are set on every hop. This is
// stricter than net/http, which keeps such headers for a subdomain and
// across a scheme or port change; credential headers the caller set are
// the caller's, and http.Client decides whether to copy them.
//
// An empty (or nil) h returns a middleware that returns its next
// RoundTripper itself, at no cost. The request is copied, never changed:
// the copy shares the caller's body and context and gets its own header
// map. The returned middleware is safe for concurrent use; h is copied and
// may be changed afterwards.
func Headers(h map[string]string, o HeadersOptions) Middleware {
	if len(h) == 0 {
		return identity
	}
	l := &headersLayer{warn: warnOnce{ev: o.Events}}
	for k, v := range h {
		k = http.CanonicalHeaderKey(k)
		l.keys = append(l.keys, k)
		l.vals = append(l.vals, []string{v})
		cred := IsSensitiveHeader(k)
		l.cred = append(l.cred, cred)
		if cred {
			l.credNames = append(l.credNames, k)
		}
	}
	slices.Sort(l.credNames) // as the WARN lists them
	return func(next http.RoundTripper) http.RoundTripper {
		return RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			withhold := len(l.credNames) > 0 && req.Response != nil && !sameOriginAsFirst(req)
			missing := false
			for i, k := range l.keys {
				if withhold && l.cred[i] {
					continue
				}
				if _, ok := req.Header[k]; !ok {
					missing = true
					break
				}
			}
			if withhold {
				l.warnWithheld(req)
			}
			if !missing {
				return next.RoundTrip(req)
			}
			// A shallow copy is enough: only its Header is replaced, by a
			// clone that the copy owns.
			r2 := req.WithContext(req.Context())
			r2.Header = req.Header.Clone()
			if r2.Header == nil {
				r2.Header = make(http.Header, len(l.keys))
			}
			for i, k := range l.keys {
				if withhold && l.cred[i] {
					continue
				}
				if _, ok := r2.Header[k]; !ok {
					// The value slices are shared and never written to: Header.Set
					// and Add replace or append to a copy of the map entry's slice.
					r2.Header[k] = l.vals[i]
				}
			}
			return next.RoundTrip(r2)
		})
	}
}

// headersLayer is the shared state of one Headers middleware.
type headersLayer struct {
	keys      []string   // canonical names
	vals      [][]string // their values, by index
	cred      []bool     // whether each carries a credential, by index
	credNames []string   // the names that carry one
	warn      warnOnce
}

// warnWithheld logs the one WARN for credential headers withheld from a
// redirect hop, the first time for its pair of hosts.
func (l *headersLayer) warnWithheld(req *http.Request) {
	ctx := req.Context()
	if !l.warn.enabled(ctx) || req.URL == nil {
		return
	}
	from := "unknown"
	if first, _, ok := Redirects(req); ok && first.URL != nil {
		from = first.URL.Scheme + "://" + first.URL.Host
	}
	to := req.URL.Scheme + "://" + req.URL.Host
	if !l.warn.first(ctx, from+" > "+to) {
		return
	}
	l.warn.log(ctx, "credential headers withheld: redirect left the origin of the call's first request",
		slog.String("first_host", from), slog.String("host", to),
		slog.String("headers", strings.Join(l.credNames, ",")))
}

// sameOriginAsFirst reports whether req goes to the origin of its call's
// first request; false when that request is unknown.
func sameOriginAsFirst(req *http.Request) bool {
	first, _, ok := Redirects(req)
	return ok && sameOrigin(first.URL, req.URL)
}

// sameOrigin reports whether a and b have the same scheme, host name
// (ignoring case) and port (written or implied by the scheme).
func sameOrigin(a, b *url.URL) bool {
	if a == nil || b == nil || !strings.EqualFold(a.Scheme, b.Scheme) || !strings.EqualFold(a.Hostname(), b.Hostname()) {
		return false
	}
	pa, pb := a.Port(), b.Port()
	if pa == "" {
		pa = defaultPort(a.Scheme)
	}
	if pb == "" {
		pb = defaultPort(b.Scheme)
	}
	return pa == pb
}

// callerHas reports whether h has a header named name (canonical) in any
// case of its letters: h["x-timeout-ms"], set without canonicalising, is
// sent as it is, so it counts as the caller's too. It is the one test of
// "the caller set this header" for the layers that add one only when the
// caller did not (the idempotency key, the deadline header).
func callerHas(h http.Header, name string) bool {
	if _, ok := h[name]; ok {
		return true
	}
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}
