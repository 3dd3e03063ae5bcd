package middleware_test

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/middleware"
)

// fuzzParams are sensitive parameter names that redact.go lists, in the
// spellings a URL may use.
var fuzzParams = []string{
	"token", "access_token", "api_key", "apikey", "key", "secret", "password",
	"signature", "sig", "X-Amz-Signature", "ACCESS_TOKEN", "Token", "x-amz-signature",
}

// FuzzRedactURL builds URLs that hold a random secret as the value of a
// sensitive parameter, as the userinfo password and in a query-like
// (form-encoded) fragment, around random other parts, and checks that neither RedactURL
// nor RedactError lets the secret through, in any spelling the URL may hold
// it (raw, query-escaped, path-escaped). A secret shorter than 8 bytes, or
// one that the URL's other parts hold by chance (as written or as %q
// quotes them), proves nothing and is skipped.
func FuzzRedactURL(f *testing.F) {
	f.Add(uint(1), "s3cr3t-value-1", "alice", "page=2&q=x", "/v1/items")
	f.Add(uint(9), "AKIA/x+y==&;#?", "bob", "X-Amz-Date=20240101", "/bucket/obj")
	f.Add(uint(0), "tok with spaces", "", "", "/")
	f.Add(uint(4), "ünïcødé-sécret", "u%40x", "a=1;b=2", "/a b")
	f.Fuzz(func(t *testing.T, p uint, secret, user, query, path string) {
		if len(secret) < 8 {
			t.Skip()
		}
		param := fuzzParams[p%uint(len(fuzzParams))]
		build := func(s string) string {
			u := &url.URL{Scheme: "https", Host: "svc.test:8443", Path: path, RawQuery: query}
			if user != "" {
				u.User = url.UserPassword(user, s)
			}
			q := url.QueryEscape(param) + "=" + url.QueryEscape(s)
			if u.RawQuery != "" {
				u.RawQuery += "&" + q
			} else {
				u.RawQuery = q
			}
			// A query-like fragment is form-encoded, as OAuth's is.
			return u.String() + "#state=1&access_token=" + url.QueryEscape(s)
		}
		raw := build(secret)
		u, err := url.Parse(raw)
		if err != nil {
			t.Skip() // the random parts made an unparsable URL
		}
		skeleton := build(middleware.Redacted)
		forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret)}
		for _, s := range forms {
			if strings.Contains(skeleton, s) || strings.Contains(strconv.Quote(skeleton), s) || strings.Contains(middleware.Redacted, s) {
				t.Skip() // the other parts hold the secret by chance
			}
		}
		outs := map[string]string{
			"RedactURL":       middleware.RedactURL(u),
			"RedactURLString": middleware.RedactURLString(raw),
			"RedactText":      middleware.RedactText("GET " + raw + " failed"),
			"RedactError":     middleware.RedactError(fmt.Errorf("get %s: %s: %w", raw, secret, errors.ErrUnsupported), u).Error(),
			"RedactError url": middleware.RedactError(&url.Error{Op: "Get", URL: raw, Err: errors.New("tok " + url.QueryEscape(secret))}, u).Error(),
		}
		for name, out := range outs {
			for _, s := range forms {
				if strings.Contains(out, s) {
					t.Fatalf("%s(%q) = %q: holds the secret %q", name, raw, out, s)
				}
			}
		}
	})
}
