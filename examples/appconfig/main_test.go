package main

import (
	"regexp"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/exampletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAppConfigRepointsWithoutDroppingARequest runs the demo on real
// loopback servers: the client is read from the app file's http_clients
// section, calls by path, and moves to the failover server on a reload
// with every request answered.
func TestAppConfigRepointsWithoutDroppingARequest(t *testing.T) {
	out := exampletest.Run(t, 60*time.Second, run)
	exampletest.Contains(t, out,
		"client billing: base_url <primary>/api/, timeout 2s (env)",
		"serving from: primary",
		"edited config.yaml: base_url -> the failover server",
		"reloaded: generation 2, changed [billing]",
		"serving from: failover",
		", failed: 0",
	)
	if m := regexp.MustCompile(`requests: (\d+)`).FindStringSubmatch(out); m == nil || m[1] == "0" || m[1] == "1" {
		t.Errorf("requests: got %v, want several across the reload:\n%s", m, out)
	}
}
