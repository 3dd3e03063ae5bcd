package middleware

import (
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

type cloneCtxKey struct{}

// TestCloneRequestMatchesRequestClone guards the retry layer's one-allocation
// clone: field by field it equals req.Clone, and it is deep where Clone is.
func TestCloneRequestMatchesRequestClone(t *testing.T) {
	req, err := http.NewRequest("POST", "https://user:pw@api.example/v1/items?q=1#frag", strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-A", "1")
	req.Header.Add("X-A", "2")
	req.Trailer = http.Header{"X-T": {"t"}}
	req.TransferEncoding = []string{"chunked"}
	req.Form = url.Values{"f": {"1"}}
	req.PostForm = url.Values{"p": {"2"}}
	req.MultipartForm = &multipart.Form{
		Value: map[string][]string{"v": {"3"}},
		File:  map[string][]*multipart.FileHeader{"file": {{Filename: "a.txt", Header: textproto.MIMEHeader{"Content-Type": {"text/plain"}}, Size: 1}, nil}},
	}
	ctx := context.WithValue(context.Background(), cloneCtxKey{}, 1)

	got, want := cloneRequest(ctx, req), req.Clone(ctx)
	if got.GetBody == nil {
		t.Fatal("GetBody was dropped")
	}
	getBody := got.GetBody
	got.GetBody, want.GetBody = nil, nil // DeepEqual never equates funcs
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	got.GetBody = getBody
	if got.Context() != ctx {
		t.Fatal("got the wrong context")
	}
	samePtr := func(a, b any) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }
	for _, tt := range []struct {
		name string
		same bool
	}{
		{"request", got == req},
		{"URL", got.URL == req.URL},
		{"userinfo", got.URL.User == req.URL.User},
		{"Header", samePtr(got.Header, req.Header)},
		{"Header values", &got.Header["X-A"][0] == &req.Header["X-A"][0]},
		{"Trailer", samePtr(got.Trailer, req.Trailer)},
		{"TransferEncoding", &got.TransferEncoding[0] == &req.TransferEncoding[0]},
		{"Form", samePtr(got.Form, req.Form)},
		{"PostForm", samePtr(got.PostForm, req.PostForm)},
		{"MultipartForm", got.MultipartForm == req.MultipartForm},
		{"MultipartForm values", samePtr(got.MultipartForm.Value, req.MultipartForm.Value)},
		{"MultipartForm file header", got.MultipartForm.File["file"][0] == req.MultipartForm.File["file"][0]},
	} {
		if tt.same {
			t.Errorf("%s: got the caller's, want a copy", tt.name)
		}
	}

	// Changing the clone leaves the caller's request alone.
	got.URL.Path = "/changed"
	got.Header.Set("X-A", "changed")
	got.Form.Set("f", "changed")
	if req.URL.Path != "/v1/items" || req.Header.Get("X-A") != "1" || req.Form.Get("f") != "1" {
		t.Fatalf("caller's request changed: %s %v %v", req.URL, req.Header, req.Form)
	}
}

func TestCloneRequestMinimal(t *testing.T) {
	for _, tt := range []struct {
		name string
		req  *http.Request
	}{
		{"no URL, no header", &http.Request{Method: "GET"}},
		{"no userinfo", func() *http.Request { r, _ := http.NewRequest("GET", "http://h/p", nil); return r }()},
		{"routed by a ServeMux", func() *http.Request {
			r, _ := http.NewRequest("GET", "http://h/items/7", nil)
			r.Pattern = "/items/{id}"
			r.SetPathValue("id", "7")
			return r
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if got, want := cloneRequest(ctx, tt.req), tt.req.Clone(ctx); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestCloneRequestAllocs(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://h/p", nil) // an empty, non-nil Header
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { _ = cloneRequest(ctx, req) }); n != 2 {
		t.Fatalf("got %v allocs, want 2 (request+URL, Header)", n)
	}
}

// TestDeadlineAllocs guards the timeout layer's success path: the context
// (context.WithDeadlineCause: 4 allocations in Go 1.26) plus one allocation
// for the request copy and the body wrapper together.
func TestDeadlineAllocs(t *testing.T) {
	body := &nopBody{}
	resp := &http.Response{StatusCode: 200, Body: body}
	next := RoundTripperFunc(func(*http.Request) (*http.Response, error) { resp.Body = body; return resp, nil })
	req, _ := http.NewRequest("GET", "http://h/p", nil)
	for _, tt := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"Timeout", Timeout(time.Minute, TimeoutOptions{})(next)},
		{"AttemptTimeout", AttemptTimeout(time.Minute, TimeoutOptions{})(next)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := testing.AllocsPerRun(100, func() {
				r, err := tt.rt.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				r.Body.Close()
			})
			if n > 5 {
				t.Fatalf("got %v allocs, want at most 5", n)
			}
		})
	}
}

type nopBody struct{}

func (*nopBody) Read([]byte) (int, error) { return 0, io.EOF }
func (*nopBody) Close() error             { return nil }

var sinkReq *http.Request

// BenchmarkCloneRequest compares the retry layer's clone with req.Clone.
func BenchmarkCloneRequest(b *testing.B) {
	req, _ := http.NewRequest("GET", "http://h/p", nil)
	ctx := context.Background()
	b.Run("stdlib", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkReq = req.Clone(ctx)
		}
	})
	b.Run("one-alloc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkReq = cloneRequest(ctx, req)
		}
	})
}
