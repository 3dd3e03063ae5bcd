package main

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-http/switchboard/internal/exampletest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestKubernetesRuns(t *testing.T) {
	out := exampletest.Run(t, 60*time.Second, run)
	exampletest.Contains(t, out,
		"GET /v1/invoices/42: 503 Service Unavailable after 3 attempts",
		"GET /v1/invoices/42: 200 OK after 4 attempts",
		"mounted: ..2026_11_29_10_00_00.123, ..data -> ..2026_11_29_10_00_00.123, clients.yaml -> ..data/clients.yaml",
		"status: generation 1, client billing: timeout 3s (env), retry.max_retries 2",
		"swapped ..data -> ..2026_11_29_10_05_00.456",
		"reloaded: generation 2, changed [billing]",
		"status: generation 2, client billing: timeout 3s (env), retry.max_retries 4",
	)
}
