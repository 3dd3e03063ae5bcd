package middleware

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Redacted replaces the value of every sensitive query parameter in a
// redacted URL, and every secret in a redacted error message.
const Redacted = "REDACTED"

// sensitiveParams are the query parameter names, lower-cased, whose values
// never reach a log record, an event or an error.
var sensitiveParams = map[string]struct{}{
	"token": {}, "access_token": {}, "refresh_token": {}, "id_token": {},
	"api_key": {}, "apikey": {}, "api-key": {}, "key": {},
	"secret": {}, "client_secret": {},
	"password": {}, "passwd": {}, "pwd": {},
	"signature": {}, "sig": {},
	"x-amz-signature": {}, "x-amz-credential": {}, "x-amz-security-token": {},
	"x-goog-signature": {}, "x-goog-credential": {},
	"auth": {}, "authorization": {}, "session": {}, "sessionid": {}, "jwt": {},
}

// IsSensitiveParam reports whether values of the query parameter name are
// replaced by Redacted in redacted URLs. The match ignores case.
func IsSensitiveParam(name string) bool {
	_, ok := sensitiveParams[strings.ToLower(name)]
	return ok
}

// sensitiveHeaderWords are fragments of header names, lower-cased, whose
// values are secrets (Authorization, X-Api-Key, Cookie, X-Auth-Token, …).
var sensitiveHeaderWords = [...]string{"auth", "token", "secret", "key", "password", "passwd", "cookie", "session", "signature", "credential"}

// IsSensitiveHeader reports whether the header called name carries a
// credential: Authorization, Proxy-Authorization, Cookie and any name
// containing auth, token, secret, key, password, passwd, cookie, session,
// signature or credential, ignoring case. Every header net/http strips from
// a redirect that leaves the domain (Authorization, WWW-Authenticate,
// Cookie, Cookie2, Proxy-Authorization, Proxy-Authenticate) is one. It is
// the one decision of "is this header a credential": output (Settings,
// Status, the status JSON, explain) shows such values as Redacted
// (RedactHeaders), and Headers sends such headers only to the origin of
// the call's first request. The idempotency key (Idempotency-Key contains
// "key") follows it too: a key is only sent to the origin it was made
// for, and a redirect hop to another origin gets a new one. It is safe
// for concurrent use.
func IsSensitiveHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range sensitiveHeaderWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// RedactHeaders returns a copy of h with the value of every sensitive header
// (IsSensitiveHeader) replaced by Redacted; an empty value stays empty, so
// that "none set" shows. A nil h gives nil. h is not changed. It is safe
// for concurrent use.
func RedactHeaders(h map[string]string) map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, len(h))
	for name, v := range h {
		if v != "" && IsSensitiveHeader(name) {
			v = Redacted
		}
		out[name] = v
	}
	return out
}

// RedactURL returns u as a string without its userinfo and with the value of
// every sensitive query parameter (see IsSensitiveParam) replaced by
// Redacted, in the query and in a query-like fragment (OAuth's
// #access_token=…). Parameters are split at & and at ;. The order and
// spelling of the other parameters are kept. A nil u gives "". It is the
// one place through which every URL that switchboard logs, reports in an
// event, puts in an error or shows in status passes. It is safe for
// concurrent use, and a URL with nothing to redact costs what u.String does.
func RedactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	q := redactQuery(u.RawQuery)
	frag := rawFragment(u)
	rf := redactQuery(frag)
	if u.User == nil && q == u.RawQuery && rf == frag {
		return u.String()
	}
	c := *u
	c.User = nil
	c.RawQuery = q
	if rf != frag {
		f, err := url.PathUnescape(rf)
		if err != nil { // cannot happen for an escaped fragment; drop it to be safe
			f, rf = "", ""
		}
		c.Fragment, c.RawFragment = f, rf
	}
	return c.String()
}

// RedactURLString parses raw and returns it redacted as RedactURL does. A
// string that does not parse as a URL gives its part before any '?' or '#',
// with the userinfo dropped when it can be told apart, and with Redacted
// standing for the rest. It is safe for concurrent use.
func RedactURLString(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return RedactURL(u)
	}
	head, _, cut := strings.Cut(raw, "#")
	h, _, cutQ := strings.Cut(head, "?")
	cut = cut || cutQ
	if scheme, rest, ok := strings.Cut(h, "://"); ok {
		authEnd := strings.IndexAny(rest, "/")
		if authEnd < 0 {
			authEnd = len(rest)
		}
		if at := strings.LastIndexByte(rest[:authEnd], '@'); at >= 0 {
			rest = rest[at+1:]
		}
		h = scheme + "://" + rest
	} else if at := strings.LastIndexByte(h, '@'); at >= 0 {
		h = h[at+1:]
	}
	if cut {
		return h + "?" + Redacted
	}
	return h
}

// RedactText returns s with every URL in it redacted: a scheme, "://" and
// the characters up to the next space, quote or bracket are redacted as
// RedactURLString does; then any sensitive parameter left in the text
// (after ?, &, ; or #, such as the tail of a URL cut by a space) has its
// value, up to the next &, ;, #, space or quote, replaced by Redacted.
// Text without "://" and without "=" is returned as is. Status uses it for
// error messages it did not build. It is safe for concurrent use.
func RedactText(s string) string {
	if strings.Contains(s, "://") {
		s = redactURLsInText(s)
	}
	if strings.IndexByte(s, '=') >= 0 {
		s = redactParamsInText(s)
	}
	return s
}

// textStop are the bytes that end a URL or a parameter value in free text.
const textStop = " \t\r\n\"'`<>()[]{}"

func redactURLsInText(s string) string {
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeChar(rest[start-1]) {
			start--
		}
		end := i + 3
		for end < len(rest) && strings.IndexByte(textStop, rest[end]) < 0 {
			end++
		}
		b.WriteString(rest[:start])
		if start == i { // no scheme: not a URL
			b.WriteString(rest[i:end])
		} else {
			b.WriteString(RedactURLString(rest[start:end]))
		}
		rest = rest[end:]
	}
}

// redactParamsInText replaces the values of sensitive name=value pairs that
// follow ?, &, ; or # anywhere in s.
func redactParamsInText(s string) string {
	var b strings.Builder
	last := 0 // s[:last] is written to b (when b is in use)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '?' && c != '&' && c != ';' && c != '#' {
			continue
		}
		nameEnd := i + 1
		for nameEnd < len(s) && s[nameEnd] != '=' && strings.IndexByte("&;#?"+textStop, s[nameEnd]) < 0 {
			nameEnd++
		}
		if nameEnd >= len(s) || s[nameEnd] != '=' || !isSensitiveRawName(s[i+1:nameEnd]) {
			continue
		}
		valEnd := nameEnd + 1
		for valEnd < len(s) && strings.IndexByte("&;#"+textStop, s[valEnd]) < 0 {
			valEnd++
		}
		if s[nameEnd+1:valEnd] == Redacted || valEnd == nameEnd+1 {
			continue
		}
		b.WriteString(s[last : nameEnd+1])
		b.WriteString(Redacted)
		last = valEnd
		i = valEnd - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func isSchemeChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// rawFragment returns u's fragment as written when Parse kept it
// (RawFragment), else as escaped: the spelling whose parameter boundaries
// are the ones the URL was written with.
func rawFragment(u *url.URL) string {
	if u.RawFragment != "" {
		return u.RawFragment
	}
	return u.EscapedFragment()
}

// isParamSep reports whether c ends a parameter in a query or fragment.
func isParamSep(c byte) bool { return c == '&' || c == ';' || c == '#' }

// redactQuery replaces the values of sensitive parameters in a raw query (or
// query-like fragment), splitting at &, ; and # (a second # lands in the
// fragment). It returns raw itself, without allocating, when there is
// nothing to replace.
func redactQuery(raw string) string {
	var b strings.Builder
	changed := false
	start := 0
	for i := 0; i <= len(raw); i++ {
		if i < len(raw) && !isParamSep(raw[i]) {
			continue
		}
		part := raw[start:i]
		name, _, hasValue := strings.Cut(part, "=")
		if hasValue && isSensitiveRawName(name) {
			if !changed {
				changed = true
				b.Grow(len(raw))
				b.WriteString(raw[:start])
			}
			b.WriteString(name)
			b.WriteString("=")
			b.WriteString(Redacted)
		} else if changed {
			b.WriteString(part)
		}
		if changed && i < len(raw) {
			b.WriteByte(raw[i])
		}
		start = i + 1
	}
	if !changed {
		return raw
	}
	return b.String()
}

// isSensitiveRawName reports whether an escaped parameter name is sensitive.
func isSensitiveRawName(name string) bool {
	if IsSensitiveParam(name) {
		return true
	}
	if strings.ContainsAny(name, "%+ ") {
		if n, err := url.QueryUnescape(name); err == nil {
			return IsSensitiveParam(strings.TrimSpace(n))
		}
	}
	return false
}

// secretsOf returns the secret parts of u, longest first: the userinfo (as
// written, and its password or, without one, its username) and the values
// of sensitive parameters of its query and fragment, escaped and unescaped.
// It returns nil when u holds none.
func secretsOf(u *url.URL) []string {
	var out []string
	add := func(s string) {
		if s != "" && s != Redacted && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if u.User != nil {
		enc := u.User.String()
		add(enc)
		if p, ok := u.User.Password(); ok {
			add(p)
			if _, ep, ok := strings.Cut(enc, ":"); ok {
				add(ep)
			}
		} else { // a lone username is often a token (https://TOKEN@host)
			add(u.User.Username())
		}
	}
	for _, raw := range [...]string{u.RawQuery, rawFragment(u), u.EscapedFragment()} {
		for part := range strings.FieldsFuncSeq(raw, func(r rune) bool { return r < 0x80 && isParamSep(byte(r)) }) {
			name, v, ok := strings.Cut(part, "=")
			if !ok || !isSensitiveRawName(name) {
				continue
			}
			add(v)
			if uv, err := url.QueryUnescape(v); err == nil {
				add(uv)
			}
			if uv, err := url.PathUnescape(v); err == nil {
				add(uv)
			}
		}
	}
	// The decoded fragment too: a second '#' in a URL lands in the fragment
	// and is escaped (%23) in EscapedFragment, which hides the boundary.
	for part := range strings.FieldsFuncSeq(u.Fragment, func(r rune) bool { return r < 0x80 && isParamSep(byte(r)) }) {
		if name, v, ok := strings.Cut(part, "="); ok && IsSensitiveParam(strings.TrimSpace(name)) {
			for _, d := range [...]string{v, strings.ReplaceAll(v, "+", " ")} { // as written, and form-decoded
				add(d)
				add(url.QueryEscape(d))
				add(url.PathEscape(d))
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// RedactError returns err with its message redacted for the request URL u:
// every spelling of u replaced by RedactURL(u), then every remaining
// occurrence of a secret of u (userinfo, password, values of sensitive
// parameters, escaped or not) replaced by Redacted, then the text passed
// through RedactText. A *url.Error keeps its
// type, with its URL redacted. Otherwise the result is an error whose
// Error() is the redacted message and whose Unwrap returns err, so
// errors.Is and errors.As still see err and its chain (ErrCircuitOpen,
// context.DeadlineExceeded, *TimeoutError …), and whose Timeout() reports
// what err's does. An err whose message holds no secret of u, and every err
// when u has none, is returned as is. A nil err gives nil. It is safe for
// concurrent use.
func RedactError(err error, u *url.URL) error {
	if err == nil || u == nil {
		return err
	}
	secrets := secretsOf(u)
	if len(secrets) == 0 {
		return err
	}
	return redactErrorWith(err, u, secrets)
}

// redactError is RedactError, for the middleware's own events.
func redactError(err error, u *url.URL) error { return RedactError(err, u) }

func redactErrorWith(err error, u *url.URL, secrets []string) error {
	if ue, ok := err.(*url.Error); ok {
		c := *ue
		c.URL = redactString(RedactURLString(ue.URL), u, secrets)
		c.Err = redactErrorWith(ue.Err, u, secrets)
		if c.URL == ue.URL && c.Err == ue.Err {
			return err
		}
		return &c
	}
	msg := err.Error()
	red := redactString(msg, u, secrets)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

// redactString replaces u's spellings and then its secrets in s.
func redactString(s string, u *url.URL, secrets []string) string {
	if s == "" {
		return s
	}
	clean := ""
	for _, spelling := range [...]string{u.String(), u.Redacted()} {
		if strings.Contains(s, spelling) {
			if clean == "" {
				clean = RedactURL(u)
			}
			s = strings.ReplaceAll(s, spelling, clean)
		}
	}
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	// Last, whatever spelling of a URL or parameter the text holds that
	// differs from u's own (a URL as the caller wrote it, before parsing).
	return RedactText(s)
}

// redactedError carries a redacted message in front of the original error.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Timeout reports whether the original error is a timeout (net.Error), so
// that (*url.Error).Timeout, which asks the error it wraps directly, keeps
// working through the redaction.
func (e *redactedError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.err, &t) && t.Timeout()
}

// RedactErrors returns the middleware that passes every error of the layers
// below through RedactError with the request's URL, so that no error that
// leaves a pipeline holds a secret of its URL. A registry puts it outermost.
// Responses pass untouched, and a request whose URL holds no secret costs
// nothing more. It cannot reach the *url.Error that http.Client wraps
// around a transport's error: that one holds the URL as the caller wrote it
// (with only the password masked); log errors.Unwrap(err) instead. It is
// safe for concurrent use.
func RedactErrors() Middleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(req)
			if err != nil {
				err = RedactError(err, req.URL)
			}
			return resp, err
		})
	}
}
