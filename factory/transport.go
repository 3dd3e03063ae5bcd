package factory

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"

	"github.com/switchboard-http/switchboard/config"
)

// newTransport builds a client's base *http.Transport: a clone of
// http.DefaultTransport (never DefaultTransport itself) set from the
// transport and tls blocks.
func newTransport(tc config.TransportConfig, tlc config.TLSConfig) (*http.Transport, error) {
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
			return nil, fmt.Errorf("transport.proxy_url: %w", err)
		}
		t.Proxy = http.ProxyURL(u)
	} else {
		t.Proxy = http.ProxyFromEnvironment
	}
	tcfg, err := tlsConfig(tlc)
	if err != nil {
		return nil, err
	}
	t.TLSClientConfig = tcfg
	return t, nil
}

// tlsVersions maps the tls.min_version values to crypto/tls constants.
var tlsVersions = map[string]uint16{
	"":    tls.VersionTLS12,
	"1.0": tls.VersionTLS10,
	"1.1": tls.VersionTLS11,
	"1.2": tls.VersionTLS12,
	"1.3": tls.VersionTLS13,
}

// tlsConfig reads the CA bundle and client key pair named by c.
func tlsConfig(c config.TLSConfig) (*tls.Config, error) {
	v, ok := tlsVersions[c.MinVersion]
	if !ok {
		return nil, fmt.Errorf("tls.min_version: unknown version %q", c.MinVersion)
	}
	out := &tls.Config{
		MinVersion:         v,
		ServerName:         c.ServerName,
		InsecureSkipVerify: c.InsecureSkipVerify, //nolint:gosec // an explicit, logged opt-in
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file: no PEM certificate in %s", c.CAFile)
		}
		out.RootCAs = pool
	}
	if c.CertFile != "" || c.KeyFile != "" {
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file/key_file: %w", err)
		}
		out.Certificates = []tls.Certificate{pair}
	}
	return out, nil
}

// base wraps a client's base transport to know when it is idle, so that a
// transport retired by a reload can close its connections as soon as the
// last request that started on it is done (its response body closed), and
// not before. It is safe for concurrent use.
type base struct {
	rt       http.RoundTripper
	inflight atomic.Int64
	retired  atomic.Bool
}

func (b *base) RoundTrip(req *http.Request) (*http.Response, error) {
	b.inflight.Add(1)
	resp, err := b.rt.RoundTrip(req)
	if err != nil || resp == nil || resp.Body == nil || resp.Body == http.NoBody {
		b.done()
		return resp, err
	}
	resp.Body = &trackedBody{ReadCloser: resp.Body, b: b}
	return resp, nil
}

// done ends one request; the last one on a retired transport closes it.
func (b *base) done() {
	if b.inflight.Add(-1) == 0 && b.retired.Load() {
		b.closeIdle()
	}
}

// retire marks the transport as replaced. Idle connections close now, and
// the connections still serving requests close when those requests end.
func (b *base) retire() {
	b.retired.Store(true)
	if b.inflight.Load() == 0 {
		b.closeIdle()
	}
}

// closeIdle closes the idle connections. On an *http.Transport it also makes
// connections that become idle later close instead of being pooled, until a
// new request asks for a connection; done calls it again when such a late
// request ends, so a retired transport never keeps a connection for long.
func (b *base) closeIdle() {
	if c, ok := b.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// trackedBody reports the end of a request to its base transport exactly
// once: on Close, or on the read that returns an error (io.EOF included).
type trackedBody struct {
	io.ReadCloser
	b    *base
	done atomic.Bool
}

func (t *trackedBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if err != nil {
		t.finish()
	}
	return n, err
}

func (t *trackedBody) Close() error {
	err := t.ReadCloser.Close()
	t.finish()
	return err
}

func (t *trackedBody) finish() {
	if t.done.CompareAndSwap(false, true) {
		t.b.done()
	}
}
