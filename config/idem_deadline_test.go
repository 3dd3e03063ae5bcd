package config_test

import (
	"slices"
	"testing"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// TestIdempotencyKeyAndDeadlineKeys: the keys of the issue load from a
// file, from defaults into clients, and a route may set
// retry.idempotency_key.* over its client's.
func TestIdempotencyKeyAndDeadlineKeys(t *testing.T) {
	path := writeConfig(t, `
defaults:
  deadline: {header: X-Request-Timeout-Ms}
clients:
  billing:
    retry:
      idempotency_key: {enabled: true, methods: [POST]}
    deadline: {format: grpc}
    routes:
      "PATCH /v1/charges/{id}": {retry: {idempotency_key: {methods: [PATCH], header: X-Idem}}}
      "POST /v1/refunds": {retry: {idempotency_key: {enabled: false}}}
  search: {}
`)
	cfg := mustLoad(t, config.Loader{File: path})
	search := client(t, cfg, "search")
	if got := search.Retry.IdempotencyKey; got.Enabled || got.Header != "Idempotency-Key" || !slices.Equal(got.Methods, []string{"POST", "PATCH"}) {
		t.Errorf("search idempotency_key: got %+v, want the built-in defaults (off, Idempotency-Key, [POST PATCH])", got)
	}
	if got := search.Deadline; got != (middleware.DeadlineSettings{Header: "X-Request-Timeout-Ms", Format: "ms"}) {
		t.Errorf("search deadline: got %+v, want the defaults' header, format ms", got)
	}
	billing := client(t, cfg, "billing")
	if got := billing.Retry.IdempotencyKey; !got.Enabled || got.Header != "Idempotency-Key" || !slices.Equal(got.Methods, []string{"POST"}) {
		t.Errorf("billing idempotency_key: got %+v", got)
	}
	if got := billing.Deadline; got.Header != "X-Request-Timeout-Ms" || got.Format != middleware.DeadlineGRPC {
		t.Errorf("billing deadline: got %+v", got)
	}
	patch := billing.Routes["PATCH /v1/charges/{id}"].Retry.IdempotencyKey
	if !patch.Enabled || patch.Header != "X-Idem" || !slices.Equal(patch.Methods, []string{"PATCH"}) {
		t.Errorf("route PATCH idempotency_key: got %+v, want enabled (the client's), X-Idem, [PATCH]", patch)
	}
	if refunds := billing.Routes["POST /v1/refunds"].Retry.IdempotencyKey; refunds.Enabled {
		t.Errorf("route POST /v1/refunds: got %+v, want disabled by the route", refunds)
	}
}

// TestIdempotencyKeyAndDeadlineValidation: bad header names, methods and
// formats are errors naming the key path, the file and line, and the
// value; a route cannot set deadline.* (it is the client's).
func TestIdempotencyKeyAndDeadlineValidation(t *testing.T) {
	path := writeConfig(t, `clients:
  billing:
    retry:
      idempotency_key:
        header: "Idempotency Key"
        methods: [POST, "PO ST"]
    deadline:
      header: "X-Timeout:"
      format: minutes
    routes:
      "POST /v1/charges":
        retry: {idempotency_key: {header: "a b"}}
        deadline: {header: X-Timeout}
`)
	err := mustFail(t, config.Loader{File: path}, path+":",
		`clients.billing.retry.idempotency_key.header: must be an HTTP header name, got "Idempotency Key"`,
		`clients.billing.retry.idempotency_key.methods: item 2 must be an HTTP method, got "PO ST"`,
		`clients.billing.deadline.header: must be an HTTP header name, got "X-Timeout:"`,
		`clients.billing.deadline.format: must be one of ms, seconds, grpc, got "minutes"`,
		`clients.billing.routes."POST /v1/charges".retry.idempotency_key.header: must be an HTTP header name, got "a b"`,
		`clients.billing.routes."POST /v1/charges".deadline`,
	)
	lines := map[string]int{
		"clients.billing.retry.idempotency_key.header":  5,
		"clients.billing.retry.idempotency_key.methods": 6,
		"clients.billing.deadline.header":               8,
		"clients.billing.deadline.format":               9,
	}
	for _, fe := range config.FieldErrors(err) {
		want, ok := lines[fe.Path]
		if !ok {
			continue
		}
		delete(lines, fe.Path)
		if fe.Line != want {
			t.Errorf("%s: line %d, want %d", fe.Path, fe.Line, want)
		}
	}
	for p := range lines {
		t.Errorf("no field error for %s", p)
	}
}

// TestIdempotencyKeyAndDeadlineFromEnvAndFlags: the keys resolve from env
// (idempotency_key's own underscore included) and flags like any other.
func TestIdempotencyKeyAndDeadlineFromEnvAndFlags(t *testing.T) {
	cfg := mustLoad(t, config.Loader{
		File:      writeConfig(t, "clients:\n  billing: {}\n"),
		EnvPrefix: "SB_",
		Environ: environ(
			"SB_CLIENTS__BILLING__RETRY__IDEMPOTENCY_KEY__ENABLED=true",
			"SB_CLIENTS__BILLING__RETRY__IDEMPOTENCY_KEY__METHODS=POST,PUT",
			"SB_DEFAULTS__DEADLINE__FORMAT=seconds",
		),
		Flags: flagSet(t, nil, "--set", "clients.billing.deadline.header=X-Deadline"),
	})
	b := client(t, cfg, "billing")
	if k := b.Retry.IdempotencyKey; !k.Enabled || !slices.Equal(k.Methods, []string{"POST", "PUT"}) {
		t.Errorf("idempotency_key: got %+v, want enabled, [POST PUT]", k)
	}
	if d := b.Deadline; d.Header != "X-Deadline" || d.Format != middleware.DeadlineSeconds {
		t.Errorf("deadline: got %+v, want X-Deadline, seconds", d)
	}
}
