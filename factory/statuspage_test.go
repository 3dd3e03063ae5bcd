package factory_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
	"github.com/switchboard-http/switchboard/internal/fakert"
)

// browserAccept is what Chromium sends for a page.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"

func newStatusRegistry(t *testing.T) *factory.Registry {
	t.Helper()
	r, err := factory.New(config.Config{Defaults: config.Default(), Clients: map[string]config.ClientConfig{"billing": config.Default()}},
		factory.Options{Base: fakert.Status(200), Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func serve(r *factory.Registry, method, target, accept string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, req)
	return rec
}

func TestHandlerNegotiatesHTMLOrJSON(t *testing.T) {
	r := newStatusRegistry(t)
	tests := []struct {
		name, target, accept string
		wantType             string
	}{
		{"a browser gets the page", "/s", browserAccept, "text/html; charset=utf-8"},
		{"no Accept gets JSON", "/s", "", "application/json"},
		{"curl's */* gets JSON", "/s", "*/*", "application/json"},
		{"a JSON client gets JSON", "/s", "application/json", "application/json"},
		{"json preferred by q", "/s", "text/html;q=0.5, application/json", "application/json"},
		{"text/* above json", "/s", "text/*, application/json;q=0.9", "text/html; charset=utf-8"},
		{"format=json forces JSON", "/s?format=json", browserAccept, "application/json"},
		{"format=html forces the page", "/s?format=html", "application/json", "text/html; charset=utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(r, http.MethodGet, tt.target, tt.accept)
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != tt.wantType {
				t.Fatalf("got %d %q, want 200 %q", rec.Code, rec.Header().Get("Content-Type"), tt.wantType)
			}
			if tt.wantType == "application/json" && !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("the body is not JSON: %s", rec.Body)
			}
		})
	}
	if rec := serve(r, http.MethodGet, "/s?format=xml", ""); rec.Code != http.StatusBadRequest {
		t.Fatalf("format=xml: got %d, want 400", rec.Code)
	}
}

func TestStatusPageIsSelfContainedUnderCSP(t *testing.T) {
	r := newStatusRegistry(t)
	page := serve(r, http.MethodGet, "/debug/switchboard", browserAccept)
	if got := page.Header().Get("Content-Security-Policy"); got != "default-src 'self'" {
		t.Fatalf("CSP: got %q, want default-src 'self'", got)
	}
	html := page.Body.String()
	// default-src 'self' forbids inline script and style: the page has
	// none, and every file it names is one the handler serves itself, by
	// a URL relative to the handler's own path.
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`), // an inline script's body
		regexp.MustCompile(`<style`), regexp.MustCompile(`\sstyle=`), regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`(?:src|href)="(?:https?:)?//`), regexp.MustCompile(`(?:src|href)="/`),
	} {
		if m := bad.FindString(html); m != "" {
			t.Errorf("the page has %q, which the CSP or a prefix mount would break", m)
		}
	}
	refs := regexp.MustCompile(`(?:src|href)="\?asset=([^"]+)"`).FindAllStringSubmatch(html, -1)
	if len(refs) != 3 {
		t.Fatalf("the page names %d assets, want 3 (script, style, icon)", len(refs))
	}
	wantType := map[string]string{"status.js": "text/javascript; charset=utf-8", "status.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml"}
	for _, ref := range refs {
		rec := serve(r, http.MethodGet, "/debug/switchboard?asset="+ref[1], "*/*")
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 || rec.Header().Get("Content-Type") != wantType[ref[1]] {
			t.Errorf("asset %s: got %d %q (%d bytes), want 200 %q", ref[1], rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len(), wantType[ref[1]])
		}
	}
	js := serve(r, http.MethodGet, "/s?asset=status.js", "").Body.String()
	if strings.Contains(js, "innerHTML") || strings.Contains(js, "insertAdjacentHTML") || strings.Contains(js, "document.write") {
		t.Errorf("status.js builds markup from strings; it must use DOM calls and textContent")
	}
	for _, bad := range []string{"../handler.go", "index.html", "nope.js"} {
		if rec := serve(r, http.MethodGet, "/s?asset="+bad, ""); rec.Code != http.StatusNotFound {
			t.Errorf("asset %q: got %d, want 404", bad, rec.Code)
		}
	}
}

func TestHandlerIsReadOnly(t *testing.T) {
	r := newStatusRegistry(t)
	for _, target := range []string{"/s", "/s?format=html", "/s?asset=status.js"} {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions} {
			rec := serve(r, m, target, browserAccept)
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: got %d Allow %q, want 405 Allow GET, HEAD", m, target, rec.Code, rec.Header().Get("Allow"))
			}
		}
		if rec := serve(r, http.MethodHead, target, browserAccept); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
			t.Errorf("HEAD %s: got %d with %d bytes, want 200 and no body", target, rec.Code, rec.Body.Len())
		}
	}
}
