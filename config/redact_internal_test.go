package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestSecretBearingKeysAreRedactedByTheKeyTable: the key table's
// redaction column alone decides what output hides. A secret-looking
// value planted in every leaf the column marks (client and route) is
// hidden by Redacted, Settings and ChangedKeys, and each marked leaf is
// one of the secret-bearing keys: the auth secrets, headers, proxy_url.
func TestSecretBearingKeysAreRedactedByTheKeyTable(t *testing.T) {
	want := map[string]redaction{
		"auth.bearer_token":   redactSecret,
		"auth.basic.password": redactSecret,
		"headers":             redactHeaders,
		"transport.proxy_url": redactURL,
	}
	got := map[string]redaction{}
	for _, l := range keyTable {
		if l.redact != redactNone {
			got[l.path] = l.redact
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("redaction column: got %v, want %v", got, want)
	}

	const secret = "s3cr3t-value"
	c := Default()
	v := reflect.ValueOf(&c).Elem()
	for _, l := range keyTable {
		fv := l.valueOf(v)
		switch l.redact {
		case redactNone:
		case redactHeaders:
			fv.Set(reflect.ValueOf(map[string]string{"Authorization": "Bearer " + secret, "X-Api-Key": secret, "Cookie": "sid=" + secret, "User-Agent": "ua"}).Convert(fv.Type()))
		case redactURL:
			fv.SetString("http://user:" + secret + "@proxy:3128/?token=" + secret)
		default:
			fv.SetString(secret)
		}
	}
	c.Routes = map[string]RouteConfig{"GET /v1/": {Headers: map[string]string{"X-Api-Key": secret}}}

	red := c.Redacted()
	for _, out := range []string{
		fmt.Sprintf("%#v", red.Routes["GET /v1/"].Headers),
		fmt.Sprintf("%#v", map[string]string(red.Headers)),
		red.Transport.ProxyURL, red.Auth.BearerToken.Reveal(), red.Auth.Basic.Password.Reveal(),
		fmt.Sprint(red.Settings()), fmt.Sprint(ChangedKeys(Default(), c)),
	} {
		if strings.Contains(out, secret) {
			t.Errorf("shows the secret: %s", out)
		}
	}
	if red.Headers["User-Agent"] != "ua" || red.Headers["X-Api-Key"] != Redacted || !strings.Contains(red.Transport.ProxyURL, "REDACTED@proxy:3128") {
		t.Errorf("Redacted: headers %v, proxy_url %s", red.Headers, red.Transport.ProxyURL)
	}
	if c.Headers["X-Api-Key"] != secret || c.Routes["GET /v1/"].Headers["X-Api-Key"] != secret {
		t.Error("Redacted changed its receiver's maps")
	}
}
