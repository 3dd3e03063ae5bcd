package factory_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
)

// TestMalformedAuthSectionIsNotQuotedInReloadErrors: a store edit that
// writes an auth section as text (`auth: "Bearer …"`, `basic: "svc:pw"`)
// is rejected, and neither Reload's error, Status().LastError, its %v nor
// the status JSON quotes the credential.
func TestMalformedAuthSectionIsNotQuotedInReloadErrors(t *testing.T) {
	const cred = "tok-5ecr3t-in-a-string"
	ok := map[string]any{"clients": map[string]any{"billing": map[string]any{"timeout": "2s"}}}
	src := &memSource{name: "mem", tree: ok}
	r, err := factory.Open(context.Background(), factory.Options{Sources: []config.Source{src}, NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })

	for _, auth := range []any{
		"Bearer " + cred,
		map[string]any{"host": "api.test", "basic": "svc:" + cred},
	} {
		src.set(map[string]any{"clients": map[string]any{"billing": map[string]any{"auth": auth}}}, nil, "")
		err := r.Reload()
		if err == nil {
			t.Fatalf("reload with auth %T: got nil, want an error", auth)
		}
		rec := httptest.NewRecorder()
		r.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/switchboard", nil))
		st := r.Status()
		for where, text := range map[string]string{
			"Reload error":     err.Error(),
			"Status.LastError": fmt.Sprint(st.LastError),
			"Status %+v":       fmt.Sprintf("%+v", st),
			"status JSON":      rec.Body.String(),
		} {
			if strings.Contains(text, cred) {
				t.Errorf("%s quotes the credential: %s", where, text)
			}
		}
		if !strings.Contains(err.Error(), "clients.billing.auth") {
			t.Errorf("Reload error %q does not name the key", err)
		}
	}
}
