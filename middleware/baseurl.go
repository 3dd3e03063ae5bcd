package middleware

import (
	"net/http"
	"net/url"
	"strings"
)

// BaseURL returns the middleware that resolves a request URL without a
// host against base, by RFC 3986 reference resolution
// (url.URL.ResolveReference), before the layers below see it: with base
// https://billing.internal/api/, "v1/invoices" becomes
// https://billing.internal/api/v1/invoices and "/v1/invoices" becomes
// https://billing.internal/v1/invoices (a path from the root replaces
// base's). A request whose URL has a host, or is absolute, passes as it
// is. It is meant to be outermost, so that every layer, route matching
// included, sees the resolved URL.
//
// A redirect answering a resolved request with a relative-path Location
// ("v2/x", "../x") has its Location resolved against the resolved URL, so
// that http.Client, which resolves it against the caller's host-less URL,
// follows the URL the server meant. That hop's URL then has a host the
// caller's had not, so http.Client drops the caller's Authorization,
// Cookie and other sensitive headers on it, as it does on a redirect to
// another host. A Location from the root ("/v2/x", as http.Redirect
// writes) is left as it is: http.Client keeps it host-less, this layer
// resolves it alike, and the caller's headers are kept.
//
// A nil base, or one without a scheme and host, returns a middleware that
// returns its next RoundTripper itself. The caller's request is never
// changed: the resolved one is a copy (Request.WithContext) with its own
// URL. It is safe for concurrent use.
func BaseURL(base *url.URL) Middleware {
	if base == nil || !base.IsAbs() || base.Host == "" {
		return identity
	}
	return func(next http.RoundTripper) http.RoundTripper {
		return RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL == nil || req.URL.Host != "" || req.URL.IsAbs() {
				return next.RoundTrip(req)
			}
			u := base.ResolveReference(req.URL)
			r := req.WithContext(req.Context())
			r.URL = u
			resp, err := next.RoundTrip(r)
			if WillBeFollowed(r, resp, err) {
				loc := resp.Header.Get("Location")
				// A path from the root ("/x", not "//host/x") is left as
				// it is: http.Client resolves it to a host-less URL this
				// layer resolves alike, and, the host unchanged, keeps
				// the caller's credentials on the next hop.
				if !rootPath(loc) {
					if l, perr := url.Parse(loc); perr == nil && !l.IsAbs() {
						resp.Header.Set("Location", u.ResolveReference(l).String())
					}
				}
			}
			return resp, err
		})
	}
}

// rootPath reports whether loc is a path from the root: one leading "/",
// not the "//" of a network-path reference.
func rootPath(loc string) bool {
	return strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//")
}
