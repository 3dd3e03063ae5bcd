package middleware

import "net/http"

// Middleware decorates an http.RoundTripper. Each layer of a switchboard
// pipeline is one.
type Middleware func(next http.RoundTripper) http.RoundTripper

// RoundTripperFunc adapts a function to http.RoundTripper. It is safe for
// concurrent use when the function is.
type RoundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f(req).
func (f RoundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Chain composes middleware; the first is the outermost, so
// Chain(a, b, c)(rt) runs as a(b(c(rt))). Nil entries are skipped, and
// Chain() returns its argument unchanged.
func Chain(mws ...Middleware) Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		for i := len(mws) - 1; i >= 0; i-- {
			if mws[i] != nil {
				next = mws[i](next)
			}
		}
		return next
	}
}

// identity is the Middleware of a layer that has nothing to do: it returns
// next itself, so it adds no cost. Constructors return it rather than nil.
func identity(next http.RoundTripper) http.RoundTripper { return next }
