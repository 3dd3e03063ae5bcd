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
//
// A pattern's host may name a port ("POST billing.test:8443/v1/charges"),
// which ServeMux alone would never match (it compares hosts without their
// ports). Such a pattern matches a request to that host name and port
// only, the port written in the URL or implied by its scheme (https 443,
// http 80), as auth.host does: "billing.test:443/" matches
// https://billing.test/ but not https://billing.test:8443/ nor
// http://billing.test/. A host pattern without a port matches every port,
// as in ServeMux. A pattern with a port is more specific than the same
// one without: for a request to billing.test:8443,
// "billing.test:8443/v1/" wins over "billing.test/v1/", which wins over
// "/v1/". ServeMux still does the matching: a pattern with a port is
// registered with its port separator spelled '@', a byte no URL host
// holds, and a request is asked with that spelling first.
//
// A Routes is immutable and safe for concurrent use.
type Routes struct {
	mux      *http.ServeMux
	patterns []string
	// withPort marks, by index, the patterns whose host names a port; nil
	// when none does, and then a request is asked once, as ServeMux would.
	withPort []bool
	// spelled maps the host of each pattern with a port, as registered
	// ("billing.test@8443"), to its host as written, for error messages.
	spelled map[string]string
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
			// A pattern with a port was registered with its host spelled
			// otherwise; the reason quotes every pattern as written.
			for registered, written := range r.spelled {
				reason = strings.ReplaceAll(reason, registered, written)
			}
			reason = strings.TrimPrefix(reason, "parsing "+fmt.Sprintf("%q", p)+": ")
			err = &RoutePatternError{Pattern: p, Reason: reason}
		}
	}()
	if strings.TrimSpace(p) == "" {
		return &RoutePatternError{Pattern: p, Reason: "empty pattern"}
	}
	registered, host, hasPort, err := withPortSpelled(p)
	if err != nil {
		return &RoutePatternError{Pattern: p, Reason: err.Error()}
	}
	if hasPort {
		if r.spelled == nil {
			r.spelled = map[string]string{}
		}
		r.spelled[portSpelled(host)] = host
	}
	r.mux.Handle(registered, routeHandler(len(r.patterns)))
	if hasPort && r.withPort == nil {
		r.withPort = make([]bool, len(r.patterns), len(r.patterns)+1)
	}
	if r.withPort != nil {
		r.withPort = append(r.withPort, hasPort)
	}
	r.patterns = append(r.patterns, p)
	return nil
}

// withPortSpelled returns pattern p as it is registered: p itself, or,
// when its host names a port, p with that host's port separator spelled
// '@' (the same length, so ServeMux's offsets still point into p). host is
// p's host as written. A port that is empty or not a number, or that
// follows no host name, is an error.
func withPortSpelled(p string) (registered, host string, hasPort bool, err error) {
	// The host is what ServeMux reads as one: after the method and its
	// blanks, up to the first '/'.
	start := 0
	if i := strings.IndexAny(p, " \t"); i >= 0 {
		start = i + 1
		for start < len(p) && (p[start] == ' ' || p[start] == '\t') {
			start++
		}
	}
	end := strings.IndexByte(p[start:], '/')
	if end < 0 {
		return p, "", false, nil // ServeMux rejects it
	}
	host = p[start : start+end]
	colon := strings.LastIndexByte(host, ':')
	if colon < 0 || strings.IndexByte(host[colon:], ']') >= 0 {
		return p, host, false, nil // no port ("[::1]" has none)
	}
	port := host[colon+1:]
	if port == "" || strings.Trim(port, "0123456789") != "" {
		return "", host, false, fmt.Errorf("host %q: port must be a number", host)
	}
	if colon == 0 {
		return "", host, false, fmt.Errorf("host %q: a port needs a host name", host)
	}
	return p[:start] + portSpelled(host) + p[start+end:], host, true, nil
}

// portSpelled returns host[:port] with the separator of its port spelled
// '@', as patterns with a port are registered; host must have a port.
func portSpelled(host string) string {
	i := strings.LastIndexByte(host, ':')
	return host[:i] + "@" + host[i+1:]
}

// Patterns returns the patterns, in the order given to NewRoutes.
func (r *Routes) Patterns() []string { return append([]string(nil), r.patterns...) }

// Match returns the pattern that req matches, and false when none does
// (ServeMux would answer 404, 405, or a redirect to a cleaned or
// slash-terminated path). A client request carries its host in URL.Host and
// often an empty Host, so the match runs on a shallow copy of req whose Host
// is the URL's; an empty URL path matches as "/". A pattern with a port
// matches the port written in that host, or implied by the URL's scheme
// (see Routes). req is not changed.
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
	if r.withPort != nil {
		// Patterns with a port first: they are the more specific.
		host := probe.Host
		if spelled := hostPortSpelled(host, req.URL.Scheme); spelled != "" {
			probe.Host = spelled
			if i, ok := r.ask(probe); ok && r.withPort[i] {
				return i, true
			}
			probe.Host = host
		}
	}
	return r.ask(probe)
}

// ask returns the index of the pattern the mux matches for probe.
func (r *Routes) ask(probe *http.Request) (int, bool) {
	h, _ := r.mux.Handler(probe)
	i, ok := h.(routeHandler)
	return int(i), ok && i != noRoute
}

// hostPortSpelled returns hostport as patterns with a port are registered
// (portSpelled), its port the one written or, without one, the default
// port of scheme; "" when there is no port to name.
func hostPortSpelled(hostport, scheme string) string {
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && strings.IndexByte(hostport[i:], ']') < 0 {
		if i == len(hostport)-1 { // "host:" names the default port
			hostport = hostport[:i]
		} else {
			return portSpelled(hostport)
		}
	}
	if port := defaultPort(scheme); port != "" {
		return hostport + "@" + port
	}
	return ""
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
