package factory

import (
	"bytes"
	"embed"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// The status page's files, served by Handler itself: the page for
// ?format=html (or a browser's Accept), each asset for ?asset=<name>. The
// page refers to them by query alone ("?asset=status.js",
// "?format=json"), relative URLs that resolve to the handler's own path
// wherever it is mounted, with or without http.StripPrefix, so no route
// beside the handler's is needed.
//
//go:embed statuspage
var statusPage embed.FS

// statusAssets are the names ?asset= may ask for, the only files served.
var statusAssets = map[string]bool{"status.js": true, "status.css": true, "favicon.svg": true}

// statusPageCSP allows nothing but this origin's own files: no inline
// script or style (the page has none), no other host.
const statusPageCSP = "default-src 'self'"

// Response formats of Handler.
const (
	formatJSON = "json"
	formatHTML = "html"
)

// statusFormat returns the format req asks for: ?format= when set (json or
// html; any other value is an error), else html when its Accept prefers
// text/html to application/json, else json.
func statusFormat(req *http.Request) (string, bool) {
	switch f := req.URL.Query().Get("format"); f {
	case formatJSON, formatHTML:
		return f, true
	case "":
	default:
		return "", false
	}
	if prefersHTML(req.Header.Values("Accept")) {
		return formatHTML, true
	}
	return formatJSON, true
}

// prefersHTML reports whether an Accept header ranks text/html above
// application/json: a browser's ("text/html,…,*/*;q=0.8") does, curl's
// ("*/*") and none at all do not, so tools keep getting JSON. Each media
// range's q is the most specific match's (RFC 9110, 12.5.1). The standard
// library parses one media type (mime.ParseMediaType) but has no Accept
// negotiation, and the main module takes no dependency for this loop.
func prefersHTML(accept []string) bool {
	type rng struct {
		typ, sub string
		q        float64
	}
	var ranges []rng
	for _, line := range accept {
		for part := range strings.SplitSeq(line, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(s, 64); err == nil {
					q = v
				}
			}
			typ, sub, _ := strings.Cut(mt, "/")
			ranges = append(ranges, rng{typ, sub, q})
		}
	}
	quality := func(typ, sub string) float64 {
		best, spec := 0.0, -1
		for _, r := range ranges {
			s := -1
			switch {
			case r.typ == typ && r.sub == sub:
				s = 2
			case r.typ == typ && r.sub == "*":
				s = 1
			case r.typ == "*" && r.sub == "*":
				s = 0
			}
			if s > spec {
				best, spec = r.q, s
			}
		}
		return best
	}
	return quality("text", "html") > quality("application", "json")
}

// serveStatusPage writes the page or, for ?asset=, one of its files.
func serveStatusPage(w http.ResponseWriter, req *http.Request, asset string) {
	name := "index.html"
	if asset != "" {
		if !statusAssets[asset] {
			http.NotFound(w, req)
			return
		}
		name = asset
	}
	body, err := statusPage.ReadFile(path.Join("statuspage", name))
	if err != nil {
		http.Error(w, "status page missing", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", statusPageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if asset == "" {
		h.Set("Cache-Control", "no-store")
		h.Add("Vary", "Accept")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	// ServeContent sets the type from the name, answers HEAD without a
	// body, and ranges and conditional requests as the standard library does.
	http.ServeContent(w, req, name, time.Time{}, bytes.NewReader(body))
}
