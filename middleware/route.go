package middleware

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// RoutePatternError is a route pattern that http.ServeMux does not accept:
// malformed, or in conflict with another pattern of the same set.
type RoutePatternError struct {
	Pattern string
	Reason  string // ServeMux's own words
}

func (e *RoutePatternError) Error() string {
	return fmt.Sprintf("route pattern %q: %s", e.Pattern, e.Reason)
}

// Routes matches requests against a fixed set of http.ServeMux patterns
// ("POST /v1/charges", "GET /v1/reports/{id}", "api.example.com/v2/",
// "/files/{rest...}"), with ServeMux's syntax and precedence: the most
// specific pattern wins. It holds a ServeMux whose handlers only name
// their pattern; matching is the standard library's, not a copy of it.
// A Routes is immutable and safe for concurrent use.
type Routes struct {
	mux      *http.ServeMux
	patterns []string
}

// routeHandler names the pattern it was registered for; it serves nothing.
type routeHandler int

func (routeHandler) ServeHTTP(http.ResponseWriter, *http.Request) {}

// NewRoutes returns the Routes of patterns. Every pattern ServeMux rejects
// (malformed, or conflicting with an earlier one) is a *RoutePatternError;
// they are joined with errors.Join. Patterns are registered in the order
// given, so a conflict is reported on the later one.
func NewRoutes(patterns ...string) (*Routes, error) {
	r := &Routes{mux: http.NewServeMux()}
	var errs []error
	for _, p := range patterns {
		if err := r.register(p); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// A catch-all that names no route, unless a pattern takes "/" itself:
	// without it ServeMux builds a 404 or 405 answer (Allow lists and all)
	// for every request that matches no route, the common case.
	func() {
		defer func() { _ = recover() }() // "/" is a user's pattern: it stands
		r.mux.Handle("/", routeHandler(noRoute))
	}()
	return r, nil
}

// noRoute is the handler index of the internal catch-all.
const noRoute = -1

// register adds pattern p, turning ServeMux's panic on a bad one into an
// error.
func (r *Routes) register(p string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			reason := fmt.Sprint(v)
			// ServeMux prefixes its messages with the pattern; say it once.
			reason = strings.TrimPrefix(reason, "parsing "+fmt.Sprintf("%q", p)+": ")
			err = &RoutePatternError{Pattern: p, Reason: reason}
		}
	}()
	if strings.TrimSpace(p) == "" {
		return &RoutePatternError{Pattern: p, Reason: "empty pattern"}
	}
	r.mux.Handle(p, routeHandler(len(r.patterns)))
	r.patterns = append(r.patterns, p)
	return nil
}

// Patterns returns the patterns, in the order given to NewRoutes.
func (r *Routes) Patterns() []string { return append([]string(nil), r.patterns...) }

// Match returns the pattern that req matches, and false when none does
// (ServeMux would answer 404, 405, or a redirect to a cleaned or
// slash-terminated path). A client request carries its host in URL.Host and
// often an empty Host, so the match runs on a shallow copy of req whose Host
// is the URL's; an empty URL path matches as "/". req is not changed.
func (r *Routes) Match(req *http.Request) (string, bool) {
	if i, ok := r.index(req); ok {
		return r.patterns[i], true
	}
	return "", false
}

// index returns the index of the pattern req matches.
func (r *Routes) index(req *http.Request) (int, bool) {
	if req == nil || req.URL == nil {
		return 0, false
	}
	// The match runs on a copy that ServeMux only reads and nobody sends:
	// the host the server will see (Host, else the URL's), lower-cased as
	// hosts compare; an empty method as GET and an empty path as "/", as
	// net/http sends them.
	probe := req.WithContext(req.Context())
	probe.Host = req.Host
	if probe.Host == "" {
		probe.Host = req.URL.Host
	}
	probe.Host = strings.ToLower(probe.Host)
	if probe.Method == "" {
		probe.Method = http.MethodGet
	}
	if req.URL.Path == "" {
		u := *req.URL
		u.Path = "/"
		probe.URL = &u
	}
	h, _ := r.mux.Handler(probe)
	i, ok := h.(routeHandler)
	return int(i), ok && i != noRoute
}

// Router returns a RoundTripper that sends each request to the
// RoundTripper of the pattern it matches (Routes.Match), or to fallback
// when it matches none or its pattern has no entry in rts. It changes
// nothing of the request. It is safe for concurrent use when the
// RoundTrippers are; rts is copied.
func Router(routes *Routes, rts map[string]http.RoundTripper, fallback http.RoundTripper) http.RoundTripper {
	byIndex := make([]http.RoundTripper, len(routes.patterns))
	for i, p := range routes.patterns {
		if rt := rts[p]; rt != nil {
			byIndex[i] = rt
		} else {
			byIndex[i] = fallback
		}
	}
	return &routerRT{routes: routes, byIndex: byIndex, fallback: fallback}
}

// routerRT is the RoundTripper of Router.
type routerRT struct {
	routes   *Routes
	byIndex  []http.RoundTripper
	fallback http.RoundTripper
}

func (rt *routerRT) RoundTrip(req *http.Request) (*http.Response, error) {
	if i, ok := rt.routes.index(req); ok {
		return rt.byIndex[i].RoundTrip(req)
	}
	return rt.fallback.RoundTrip(req)
}
