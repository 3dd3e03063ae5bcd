package middleware

import (
	"context"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
)

// attemptReq holds the request of one attempt and the copy of its URL, so
// that a clone costs one allocation for the two (448 bytes, a size class of
// its own). The rare userinfo is copied apart rather than widening every
// clone to the next size class.
type attemptReq struct {
	r http.Request
	u url.URL
}

// cloneRequest returns a deep copy of req with context ctx, as
// req.Clone(ctx) does: the URL (and its userinfo), Header, Trailer,
// TransferEncoding, Form, PostForm and MultipartForm are copied, the rest
// is shared. The request and URL copies share one allocation.
//
// A request that a ServeMux routed (Pattern set) carries path values that
// only net/http can copy; it gets req.Clone. Values set with SetPathValue
// on a request without a pattern stay shared with req, as they are not
// visible outside net/http; no layer of this package sets any.
func cloneRequest(ctx context.Context, req *http.Request) *http.Request {
	if req.Pattern != "" {
		return req.Clone(ctx)
	}
	c := new(attemptReq)
	// WithContext is inlined and its copy does not escape: it is built on
	// the stack and copied into c, which is the only allocation here.
	c.r = *req.WithContext(ctx)
	if req.URL != nil {
		c.u = *req.URL
		if req.URL.User != nil {
			user := *req.URL.User
			c.u.User = &user
		}
		c.r.URL = &c.u
	}
	c.r.Header = req.Header.Clone()
	c.r.Trailer = req.Trailer.Clone()
	if s := req.TransferEncoding; s != nil {
		c.r.TransferEncoding = append(make([]string, 0, len(s)), s...)
	}
	c.r.Form = cloneValues(req.Form)
	c.r.PostForm = cloneValues(req.PostForm)
	c.r.MultipartForm = cloneMultipartForm(req.MultipartForm)
	return &c.r
}

// cloneValues deep-copies v as net/http's Request.Clone does (url.Values
// and http.Header share their representation).
func cloneValues(v url.Values) url.Values {
	if v == nil {
		return nil
	}
	return url.Values(http.Header(v).Clone())
}

// cloneMultipartForm deep-copies f as net/http's Request.Clone does.
func cloneMultipartForm(f *multipart.Form) *multipart.Form {
	if f == nil {
		return nil
	}
	f2 := &multipart.Form{Value: map[string][]string(http.Header(f.Value).Clone())}
	if f.File != nil {
		m := make(map[string][]*multipart.FileHeader, len(f.File))
		for k, vv := range f.File {
			vv2 := make([]*multipart.FileHeader, len(vv))
			for i, v := range vv {
				if v != nil {
					fh := *v
					fh.Header = textproto.MIMEHeader(http.Header(v.Header).Clone())
					vv2[i] = &fh
				}
			}
			m[k] = vv2
		}
		f2.File = m
	}
	return f2
}
