package factory

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/switchboard-http/switchboard/config"
)

// newTransport checks a client's transport block and returns the function
// that builds its base *http.Transport: a clone of http.DefaultTransport
// (never DefaultTransport itself) set from the block, with a clone of tcfg
// (built by tlsConfig from the tls block and the files it names, and maybe
// shared: net/http writes to its transport's TLS configuration) as its TLS
// configuration. Every error is found here, at load time (http.DefaultTransport
// is read now, too); the build itself cannot fail, so that base can run it
// on first use. Errors name prefix + key.
func newTransport(prefix string, tc config.TransportConfig, tcfg *tls.Config) (func() *http.Transport, error) {
	dt, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("%s.transport: http.DefaultTransport is a %T, not the *http.Transport to clone", prefix, http.DefaultTransport)
	}
	proxy := http.ProxyFromEnvironment
	if tc.ProxyURL != "" {
		u, err := url.Parse(tc.ProxyURL)
		if err != nil {
			// Never quoted: the key table marks proxy_url secret-bearing (secret:"url").
			return nil, fmt.Errorf("%s.transport.proxy_url: cannot parse the URL", prefix)
		}
		proxy = http.ProxyURL(u)
	}
	return func() *http.Transport {
		t := dt.Clone()
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
		t.Proxy = proxy
		t.TLSClientConfig = tcfg.Clone()
		return t
	}, nil
}
