package factory_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchboard-http/switchboard/factory"
)

// TestFleetWithoutQuotasNamesSectionAndLine checks that the error of a
// fleet rate limit without a quota store names the key as the config's own
// errors do: under Options.Section, with the file and its line.
func TestFleetWithoutQuotasNamesSectionAndLine(t *testing.T) {
	f := filepath.Join(t.TempDir(), "app.yaml")
	doc := "server: {port: 1}\nhttp_clients:\n  clients:\n    stripe:\n      rate_limit: {requests_per_second: 5, scope: fleet}\n"
	if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := factory.Open(context.Background(), factory.Options{File: f, Section: "http_clients", NoWatch: true, Logger: discard()})
	if err == nil {
		t.Fatal("Open succeeded with scope fleet and no quota store")
	}
	want := "config " + f + ": http_clients.clients.stripe.rate_limit.scope: fleet needs a quota store: " +
		"set factory.Options.Quotas (such as quotas/redis), or use scope process (line 5)"
	if err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
}
