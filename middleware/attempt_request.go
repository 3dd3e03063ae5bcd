package middleware

import (
	"context"
	"io"
	"net/http"
	"strconv"
)

// attemptRequest returns the request that attempt n of a call sends, for
// Retry and Hedge: the caller's req with ctx (nil: req's own context) and
// the attempt's body and length (rb nil: req's own body, as is), marked
// with the attempt header if one is configured and with key, the call's
// idempotency key, unless it is "". req is never changed.
//
// The rule, one place for both layers: without ReadOnlyBelow every attempt
// is its own Request.Clone (its own Header, URL, path values), which the
// layers below may change in place. With it, a copy is made only where
// this layer changes something, as net/http's client does:
//
//   - nothing differs (the first attempt, with the caller's context and
//     body, no attempt header and no key to add): req itself;
//   - the context or the body differs (a retry's mark, a hedged copy's
//     cancel, a buffered or GetBody body): a shallow copy
//     (Request.WithContext) sharing the caller's Header, URL and path
//     values, which everything below only reads;
//   - an attempt header or a key: that shallow copy with its own Header
//     (Header.Clone), to which they are added.
//
// Hedged copies run concurrently: each has its own context, so each gets
// its own shallow copy, and what the copies share they only read; a layer
// below that must change a request copies it first (Headers, Auth and the
// factory's connection-age marker do), and the factory asks for a clone
// per attempt when code adds attempt middleware, which may write.
func (p *retryPolicy) attemptRequest(req *http.Request, ctx context.Context, rb *replay, body io.ReadCloser, length int64, n int, key string) *http.Request {
	ownCtx := ctx == nil
	if ownCtx {
		ctx = req.Context()
	}
	ownBody := rb == nil || rb.sameBody(n)
	var areq *http.Request
	switch {
	case !p.readOnly:
		areq = req.Clone(ctx)
	case ownCtx && ownBody && p.header == "" && key == "":
		return req
	default:
		areq = req.WithContext(ctx)
		if p.header != "" || key != "" {
			areq.Header = req.Header.Clone()
		}
	}
	if !ownBody {
		areq.Body, areq.ContentLength = body, length
		if rb.kind == replayBuffered {
			areq.GetBody = rb.buf.getBody
		}
	}
	p.markAttempt(areq, n)
	if key != "" {
		if areq.Header == nil {
			areq.Header = make(http.Header, 1)
		}
		areq.Header[p.idem.header] = []string{key}
	}
	return areq
}

// markAttempt sets the attempt header, if configured, on areq, an
// attempt's own copy whose Header map attemptRequest copied.
func (p *retryPolicy) markAttempt(areq *http.Request, n int) {
	if p.header == "" {
		return
	}
	if areq.Header == nil {
		areq.Header = make(http.Header, 1)
	}
	areq.Header[p.header] = []string{strconv.Itoa(n)}
}
