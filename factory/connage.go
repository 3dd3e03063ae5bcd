package factory

import (
	"context"
	"io"
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
// Request.Close when the connection it got is older than the age, and sets
// "Connection: close" on its header: a request with a body reaches the
// transport as a copy of its own (made before GotConn, to rewind the body),
// which shares the header map but not Close. net/http then closes an
// HTTP/1.1 connection after that response; HTTP/2 marks the connection not
// to be reused and closes it once its last stream ends. So no connection is cut mid-response, and none
// serves more than one request past its age. The age lives in the base, so
// a reload that changes it keeps the transport and its connections.

// agedConn is a connection the base transport dialed, with its birth time.
type agedConn struct {
	net.Conn
	born time.Time
}

// ReadFrom keeps the wrapped connection's io.ReaderFrom (a *net.TCPConn's
// sendfile and splice), which net/http uses to send request bodies.
func (c *agedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
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

// closeIfOlder returns req with a trace that marks the copy to close its
// connection when the connection it gets is older than age. It makes one
// shallow copy (WithContext) and, for a request with a body, a copy of the
// header, so req itself is never changed. A connection that is not too old
// leaves the request as the caller made it, even on the transport's own
// retry of it on another connection.
func closeIfOlder(req *http.Request, age time.Duration) *http.Request {
	var (
		out    *http.Request
		marked bool // this trace set the header, not the caller
	)
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		aged := false
		if c := agedOf(info.Conn); c != nil && time.Since(c.born) >= age {
			aged = true
		}
		out.Close = req.Close || aged
		switch {
		case !hasBody(out):
		case aged && out.Header.Get("Connection") == "":
			out.Header.Set("Connection", "close")
			marked = true
		case !aged && marked:
			out.Header.Del("Connection")
			marked = false
		}
	}}
	out = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	if hasBody(out) {
		out.Header = req.Header.Clone()
		if out.Header == nil {
			out.Header = http.Header{}
		}
	}
	return out
}

// hasBody reports whether net/http will copy req to rewind its body.
func hasBody(req *http.Request) bool { return req.Body != nil && req.Body != http.NoBody }
