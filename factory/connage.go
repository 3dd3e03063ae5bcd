package factory

import (
	"context"
	"net"
	"net/http"
	"net/http/httptrace"
	"time"
)

// transport.max_conn_age: Go's *http.Transport keeps a keep-alive
// connection for as long as it stays healthy (golang/go#23427), so a client
// behind a DNS name or a Kubernetes Service whose addresses change stays on
// the old ones. net/http has no hook for a connection's age, so the base
// transport adds the two pieces it needs: every connection it dials records
// when it was made (agedConn), and while a max age is set, each request
// carries an httptrace.ClientTrace whose GotConn (called for HTTP/1.1 and
// HTTP/2 alike, before the request is written) marks the request
// Request.Close when the connection it got is older than the age. net/http
// then sends "Connection: close" and closes an HTTP/1.1 connection after
// that response; HTTP/2 marks the connection not to be reused and closes it
// once its last stream ends. So no connection is cut mid-response, and none
// serves more than one request past its age. The age lives in the base, so
// a reload that changes it keeps the transport and its connections.

// agedConn is a connection the base transport dialed, with its birth time.
type agedConn struct {
	net.Conn
	born time.Time
}

// wrapDial makes t's dialer record each connection's birth.
func wrapDial(t *http.Transport) {
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &agedConn{Conn: c, born: time.Now()}, nil
	}
}

// agedOf returns the agedConn under c (a *tls.Conn's NetConn, say), or nil.
func agedOf(c net.Conn) *agedConn {
	for c != nil {
		if a, ok := c.(*agedConn); ok {
			return a
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		c = u.NetConn()
	}
	return nil
}

// closeIfOlder returns req with a trace that sets Close on the copy when
// the connection it gets is older than age. It makes one shallow copy
// (WithContext), so req itself is never changed.
func closeIfOlder(req *http.Request, age time.Duration) *http.Request {
	var out *http.Request
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if c := agedOf(info.Conn); c != nil && time.Since(c.born) >= age {
			out.Close = true
		}
	}}
	out = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	return out
}
