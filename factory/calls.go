package factory

import (
	"net/http"
	"sync/atomic"

	"github.com/switchboard-http/switchboard/middleware"
)

// callCounts counts a client's logical calls by outcome (middleware.Classify),
// for Status: one counter per outcome, so a call costs exactly one atomic
// add. A client's pipelines hand it on across reloads, as they do its
// latencies, so the counts are cumulative for the registry's life. The
// zero value counts from zero; it is safe for concurrent use.
type callCounts struct {
	n [middleware.OutcomePermanent + 1]atomic.Uint64
	// joined counts the calls that joined a coalesced trip already under
	// way (middleware.CoalesceOptions.Joined), for ClientStatus.CoalesceJoined.
	joined atomic.Uint64
}

// countCalls returns the outermost layer of a client's pipeline: it
// classifies each logical call once it returns, as the caller sees it
// (every layer, code's Outer middleware included, below it), and adds one
// to that outcome's counter. It changes neither the request nor the answer.
//
// http.Client runs the pipeline once per redirect hop, so a call is
// counted at the hop that ends it: a hop that http.Client will follow
// (middleware.WillBeFollowed, and within maxRedirects, the client's
// transport.max_redirects that its CheckRedirect applies) is not counted,
// the next one is. The hop at which max_redirects stops a chain counts
// with that redirect's outcome.
func countCalls(c *callCounts, maxRedirects int) middleware.Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return middleware.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if middleware.WillBeFollowed(req, resp, err) {
				if _, hops, _ := middleware.Redirects(req); hops < maxRedirects {
					return resp, err
				}
			}
			c.n[middleware.Classify(req, resp, err)].Add(1)
			return resp, err
		})
	}
}

// coalesced returns how many calls joined a coalesced trip; 0 for a nil c.
func (c *callCounts) coalesced() uint64 {
	if c == nil {
		return 0
	}
	return c.joined.Load()
}

// totals returns the calls counted, those that failed (OutcomeFailure and
// OutcomePermanent: the backend, or the way to it, failed) and those
// rejected locally (OutcomeRejected). A nil c counted nothing.
func (c *callCounts) totals() (calls, failures, rejections uint64) {
	if c == nil {
		return 0, 0, 0
	}
	for i := range c.n {
		v := c.n[i].Load()
		calls += v
		switch middleware.Outcome(i) {
		case middleware.OutcomeFailure, middleware.OutcomePermanent:
			failures += v
		case middleware.OutcomeRejected:
			rejections += v
		}
	}
	return calls, failures, rejections
}
