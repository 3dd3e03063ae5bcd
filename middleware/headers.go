package middleware

import "net/http"

// HeadersOptions are the code-only options of Headers. There are none yet:
// the zero value is the only one, and Headers takes it so that every
// stateless layer is made the same way, X(settings, XOptions).
type HeadersOptions struct{}

// Headers returns a middleware that sets each of h on a request that does not
// already carry that header; a header the caller set wins. Names are put in
// canonical form. An empty (or nil) h returns a middleware that returns its
// next RoundTripper itself, at no cost. The request is copied, never
// changed: the copy shares the caller's body and context and gets its own
// header map. The returned middleware is safe for concurrent use; h is
// copied and may be changed afterwards.
func Headers(h map[string]string, _ HeadersOptions) Middleware {
	if len(h) == 0 {
		return identity
	}
	keys := make([]string, 0, len(h))
	vals := make([][]string, 0, len(h))
	for k, v := range h {
		keys = append(keys, http.CanonicalHeaderKey(k))
		vals = append(vals, []string{v})
	}
	return func(next http.RoundTripper) http.RoundTripper {
		return RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			missing := false
			for _, k := range keys {
				if _, ok := req.Header[k]; !ok {
					missing = true
					break
				}
			}
			if !missing {
				return next.RoundTrip(req)
			}
			// A shallow copy is enough: only its Header is replaced, by a
			// clone that the copy owns.
			r2 := req.WithContext(req.Context())
			r2.Header = req.Header.Clone()
			if r2.Header == nil {
				r2.Header = make(http.Header, len(keys))
			}
			for i, k := range keys {
				if _, ok := r2.Header[k]; !ok {
					// The value slices are shared and never written to: Header.Set
					// and Add replace or append to a copy of the map entry's slice.
					r2.Header[k] = vals[i]
				}
			}
			return next.RoundTrip(r2)
		})
	}
}
