package middleware

import (
	"net/url"
	"strings"
)

// RedactProxyURL returns the proxy URL raw redacted as RedactURLString
// does, except that a userinfo reads "REDACTED@" instead of vanishing:
// "http://user:pw@proxy:3128" gives "http://REDACTED@proxy:3128". A
// request URL's userinfo is dropped from logs as noise; a proxy URL's is
// shown this way in configuration output (explain, Settings, the status
// JSON) so that ops can see a credential is configured. Safe for
// concurrent use.
func RedactProxyURL(raw string) string {
	red := RedactURLString(raw)
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return red
	}
	if scheme, rest, ok := strings.Cut(red, "://"); ok {
		return scheme + "://" + Redacted + "@" + rest
	}
	return red
}
