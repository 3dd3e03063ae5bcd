package middleware

import "net/http"

// MaxRedirectChain is the longest redirect chain Redirects follows back
// from a request, far above http.Client's default limit of 10 hops; a
// longer chain is no chain http.Client built, and counts as broken.
const MaxRedirectChain = 100

// Redirects reports where req stands in its logical call. http.Client runs
// the transport again for every redirect hop and links each hop to the
// response that caused it (req.Response), and that response to the request
// it answered (Response.Request). Redirects follows those links back and
// returns the call's first request (req itself when req.Response is nil)
// and hops, the number of redirect responses before req (0 for the first
// request).
//
// ok is false when the chain is broken: a Response whose Request is nil
// (as httptest.ResponseRecorder.Result() gives), or a chain longer than
// MaxRedirectChain. Then first is nil, and hops counts the responses
// followed, the broken one included: a lower bound of the real count, at
// least 1. Every layer that looks back along the chain (the credential
// rules of Auth and Headers, the call start of Timeout, the resend count
// of the OpenTelemetry adapter) reads it here, so they agree on a broken
// chain: credentials fail closed, the timeout starts afresh, and the
// resend count is the lower bound.
//
// req must not be nil. It only reads the chain; it is safe for concurrent
// use.
func Redirects(req *http.Request) (first *http.Request, hops int, ok bool) {
	return walkRedirects(req, nil)
}

// walkRedirects is Redirects, calling visit, when not nil, with each
// earlier request of the chain, nearest first (never req itself).
func walkRedirects(req *http.Request, visit func(*http.Request)) (first *http.Request, hops int, ok bool) {
	r := req
	for hops < MaxRedirectChain {
		if r.Response == nil {
			return r, hops, true
		}
		hops++
		if r = r.Response.Request; r == nil {
			return nil, hops, false
		}
		if visit != nil {
			visit(r)
		}
	}
	if r.Response == nil {
		return r, hops, true
	}
	return nil, hops, false
}
