package middleware

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
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
// A pattern's host compares ignoring case, as host names do: it is
// registered lower-cased, as a request's host is lower-cased before it is
// matched ("Billing.test/v1/" matches https://billing.test/v1/x); errors
// quote every pattern as written.
//
// A pattern's host may name a port ("POST billing.test:8443/v1/charges"),
// which ServeMux alone would never match (it compares hosts without their
// ports). The port is a decimal number from 1 to 65535 written without
// leading zeros ("billing.test:08443/" and "billing.test:99999/" are
// errors, as they could never be meant). Such a pattern matches a request
// to that host name and port only, the port written in the URL (compared
// by its value: https://billing.test:08443/ goes to port 8443) or implied
// by its scheme (https 443, http 80), as auth.host does: "billing.test:443/" matches
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
	// spelled maps each pattern registered otherwise than written (a
	// port, an upper-case host: "billing.test@8443/v1/") to the pattern as
	// written, for error messages; nil when there is none.
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
	var undo func() // forgets p's spelling when p fails
	defer func() {
		if v := recover(); v != nil {
			// ServeMux prefixes its messages with the pattern; say it once.
			// A pattern registered otherwise than written is quoted as
			// written.
			reason := r.asWritten(fmt.Sprint(v))
			reason = strings.TrimPrefix(reason, "parsing "+fmt.Sprintf("%q", p)+": ")
			err = &RoutePatternError{Pattern: p, Reason: reason}
			if undo != nil {
				undo()
			}
		}
	}()
	if strings.TrimSpace(p) == "" {
		return &RoutePatternError{Pattern: p, Reason: "empty pattern"}
	}
	registered, hasPort, err := registeredPattern(p)
	if err != nil {
		return &RoutePatternError{Pattern: p, Reason: err.Error()}
	}
	if registered != p {
		if r.spelled == nil {
			r.spelled = map[string]string{}
		}
		// p's own messages quote p; a p that fails leaves the spelling of
		// the pattern it conflicts with.
		prev, had := r.spelled[registered]
		r.spelled[registered] = p
		undo = func() {
			if had {
				r.spelled[registered] = prev
			} else {
				delete(r.spelled, registered)
			}
		}
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

// asWritten returns reason, a ServeMux message, with every pattern
// registered otherwise than written spelled as written.
// ServeMux prints a pattern plain and quoted (%q), so both are replaced,
// the longest first: one pattern may hold another.
func (r *Routes) asWritten(reason string) string {
	if len(r.spelled) == 0 {
		return reason
	}
	var olds []string
	news := map[string]string{}
	for reg, written := range r.spelled {
		olds = append(olds, reg, strconv.Quote(reg))
		news[reg], news[strconv.Quote(reg)] = written, strconv.Quote(written)
	}
	slices.SortFunc(olds, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(olds))
	for _, o := range olds {
		pairs = append(pairs, o, news[o])
	}
	return strings.NewReplacer(pairs...).Replace(reason)
}

// registeredPattern returns pattern p as it is registered: its host
// lower-cased, and, when that host names a port, its port separator spelled
// '@' (an ASCII host keeps its length, so ServeMux's offsets in its
// messages still point into p). A port that is not a number from 1 to 65535 written
// without leading zeros, or that follows no host name, is an error.
func registeredPattern(p string) (registered string, hasPort bool, err error) {
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
		return p, false, nil // ServeMux rejects it
	}
	host := p[start : start+end]
	lower := strings.ToLower(host)
	colon := strings.LastIndexByte(lower, ':')
	if colon < 0 || strings.IndexByte(lower[colon:], ']') >= 0 {
		return p[:start] + lower + p[start+end:], false, nil // no port ("[::1]" has none)
	}
	port := lower[colon+1:]
	if n, perr := strconv.ParseUint(port, 10, 16); perr != nil || n == 0 || port[0] == '0' {
		return "", false, fmt.Errorf("host %q: port must be a number from 1 to 65535, without leading zeros", host)
	}
	if colon == 0 {
		return "", false, fmt.Errorf("host %q: a port needs a host name", host)
	}
	return p[:start] + portSpelled(lower) + p[start+end:], true, nil
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
		} else if port := hostport[i+1:]; port[0] == '0' && len(port) > 1 {
			// Patterns name a port by its value, without leading zeros.
			if port = strings.TrimLeft(port, "0"); port == "" {
				port = "0"
			}
			return hostport[:i] + "@" + port
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
