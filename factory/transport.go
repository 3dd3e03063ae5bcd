package factory

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/switchboard-http/switchboard/config"
)

// newTransport builds a client's base *http.Transport: a clone of
// http.DefaultTransport (never DefaultTransport itself) set from the
// transport block, with tcfg (built by tlsConfig from the tls block and the
// files it names) as its TLS configuration. Errors name prefix + key.
func newTransport(prefix string, tc config.TransportConfig, tcfg *tls.Config) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: tc.DialTimeout, KeepAlive: tc.KeepAlive}
	t.DialContext = d.DialContext
	t.TLSHandshakeTimeout = tc.TLSHandshakeTimeout
	t.ResponseHeaderTimeout = tc.ResponseHeaderTimeout
	t.IdleConnTimeout = tc.IdleConnTimeout
	t.MaxIdleConns = tc.MaxIdleConns
	t.MaxIdleConnsPerHost = tc.MaxIdleConnsPerHost
	t.MaxConnsPerHost = tc.MaxConnsPerHost
	t.DisableKeepAlives = tc.DisableKeepAlives
	t.ForceAttemptHTTP2 = tc.ForceHTTP2
	if tc.ProxyURL != "" {
		u, err := url.Parse(tc.ProxyURL)
		if err != nil {
			// The URL is not shown: it may hold a password.
			return nil, fmt.Errorf("%s.transport.proxy_url: cannot parse the URL", prefix)
		}
		t.Proxy = http.ProxyURL(u)
	} else {
		t.Proxy = http.ProxyFromEnvironment
	}
	t.TLSClientConfig = tcfg
	return t, nil
}
