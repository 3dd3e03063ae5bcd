package middleware

import (
	"errors"
	"net/url"
	"strings"
)

// Redacted replaces the value of every sensitive query parameter in a
// redacted URL.
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

// RedactURL returns u as a string without its userinfo and with the value of
// every sensitive query parameter (see IsSensitiveParam) replaced by
// Redacted; the order and spelling of the other parameters are kept. A nil
// u gives "". It is the one place through which every URL that switchboard
// logs, reports in an event or puts in an error passes. It is safe for
// concurrent use.
func RedactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	if u.User == nil && !hasSensitiveParam(u.RawQuery) {
		return u.String()
	}
	c := *u
	c.User = nil
	c.RawQuery = redactQuery(u.RawQuery)
	return c.String()
}

// hasSensitiveParam reports whether the raw query holds a sensitive
// parameter; it lets RedactURL skip the copy for the common clean URL.
func hasSensitiveParam(raw string) bool {
	for raw != "" {
		var part string
		part, raw, _ = strings.Cut(raw, "&")
		name, _, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if IsSensitiveParam(name) {
			return true
		}
	}
	return false
}

// redactQuery replaces the values of sensitive parameters in a raw query.
func redactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, part := range parts {
		name, _, hasValue := strings.Cut(part, "=")
		n := name
		if un, err := url.QueryUnescape(name); err == nil {
			n = un
		}
		if hasValue && IsSensitiveParam(n) {
			parts[i] = name + "=" + Redacted
		}
	}
	return strings.Join(parts, "&")
}

// redactError returns err with every spelling of u in its message replaced
// by the redacted URL. errors.Is and errors.As still see err through it. An
// error that does not mention u is returned as is.
func redactError(err error, u *url.URL) error {
	if err == nil || u == nil {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue == err {
		c := *ue
		if pu, perr := url.Parse(ue.URL); perr == nil {
			c.URL = RedactURL(pu)
		}
		c.Err = redactError(ue.Err, u)
		return &c
	}
	raw := u.String()
	msg := err.Error()
	if raw == "" || !strings.Contains(msg, raw) {
		if u.RawQuery == "" || !strings.Contains(msg, u.RawQuery) {
			return err
		}
		return &redactedError{msg: strings.ReplaceAll(msg, u.RawQuery, redactQuery(u.RawQuery)), err: err}
	}
	return &redactedError{msg: strings.ReplaceAll(msg, raw, RedactURL(u)), err: err}
}

// redactedError carries a redacted message in front of the original error.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
