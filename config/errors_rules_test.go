package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
)

// loadErrors loads l and returns its FieldErrors, failing when there are none.
func loadErrors(t *testing.T, l config.Loader) []*config.FieldError {
	t.Helper()
	_, err := l.Load()
	fes := config.FieldErrors(err)
	if len(fes) == 0 {
		t.Fatalf("Load: got %v, want field errors", err)
	}
	return fes
}

// TestWrongKindReadsAlikeInEveryLayer guards one phrasing per kind of
// error: the same bad value gives the same message from the file, a
// Source, an env variable and a flag.
func TestWrongKindReadsAlikeInEveryLayer(t *testing.T) {
	tests := []struct {
		key, text, want string
	}{
		{"retry.max_retries", "three", `must be an integer, got "three"`},
		{"timeout", "soon", `must be a duration string like "500ms", got "soon"`},
		{"retry.budget.ratio", "lots", `must be a number, got "lots"`},
		{"circuit_breaker.enabled", "maybe", `must be true or false, got "maybe"`},
		{"retry.retryable_status", "502,x", `item 2 must be an integer, got "x"`},
	}
	for _, tt := range tests {
		segs := strings.Split(tt.key, ".")
		env := "SB_CLIENTS__BILLING__" + strings.ToUpper(strings.Join(segs, "__"))
		// The file and the Source hold what YAML and key-value stores
		// would: a list as a list, anything else as the text.
		var yamlValue string
		var srcValue any = tt.text
		if tt.key == "retry.retryable_status" {
			yamlValue = "[502, x]"
			srcValue = []any{502, "x"}
		} else {
			yamlValue = tt.text
		}
		nested := func(leaf any) map[string]any {
			m := map[string]any{segs[len(segs)-1]: leaf}
			for i := len(segs) - 2; i >= 0; i-- {
				m = map[string]any{segs[i]: m}
			}
			return map[string]any{"clients": map[string]any{"billing": m}}
		}
		yamlDoc := "clients:\n  billing:\n"
		for i, s := range segs {
			yamlDoc += strings.Repeat("  ", i+2) + s + ":"
			if i == len(segs)-1 {
				yamlDoc += " " + yamlValue
			}
			yamlDoc += "\n"
		}
		base := writeConfig(t, "clients:\n  billing: {}\n")
		layers := []struct {
			name string
			l    config.Loader
		}{
			{"file", config.Loader{File: writeConfig(t, yamlDoc)}},
			{"source", config.Loader{File: base, Sources: []config.Source{mapSource{name: "etcd", tree: nested(srcValue)}}}},
			{"env", config.Loader{File: base, EnvPrefix: "SB_", Environ: environ(env + "=" + tt.text)}},
			{"flag", config.Loader{File: base, Flags: flagSet(t, nil, "--set", "clients.billing."+tt.key+"="+tt.text)}},
		}
		for _, layer := range layers {
			t.Run(tt.key+"/"+layer.name, func(t *testing.T) {
				fes := loadErrors(t, layer.l)
				if len(fes) != 1 || fes[0].Msg != tt.want {
					t.Errorf("got %q, want one error with message %q", fes, tt.want)
				}
			})
		}
	}
}

// TestUndefinedClientFromEnvAndFlags guards against a typo in a client's
// name starting a client of its own.
func TestUndefinedClientFromEnvAndFlags(t *testing.T) {
	file := writeConfig(t, "clients:\n  billing: {}\n  search-v2: {}\n")
	tests := []struct {
		name string
		l    config.Loader
		want string
	}{
		{"env typo", config.Loader{File: file, EnvPrefix: "SVC_", Environ: environ("SVC_CLIENTS__BILING__TIMEOUT=1s")},
			`env SVC_CLIENTS__BILING__TIMEOUT: no client "biling"; did you mean billing?`},
		{"env typo in a name with a dash", config.Loader{File: file, EnvPrefix: "SVC_", Environ: environ("SVC_CLIENTS__SEARCH_V3__TIMEOUT=1s")},
			`env SVC_CLIENTS__SEARCH_V3__TIMEOUT: no client "search_v3"; did you mean search-v2?`},
		{"env with no close name", config.Loader{File: file, EnvPrefix: "SVC_", Environ: environ("SVC_CLIENTS__PAYMENTS__TIMEOUT=1s")},
			`env SVC_CLIENTS__PAYMENTS__TIMEOUT: no client "payments" in the file or sources; define it there first`},
		{"flag typo", config.Loader{File: file, Flags: flagSet(t, nil, "--set", "clients.biling.timeout=1s")},
			`--set clients.biling.timeout: no client "biling"; did you mean billing?`},
		{"flag with no close name", config.Loader{File: file, Flags: flagSet(t, nil, "--set", "clients.payments.timeout=1s")},
			`--set clients.payments.timeout: no client "payments" in the file or sources; define it there first`},
		{"a client a Source defines is known", config.Loader{File: file, EnvPrefix: "SVC_",
			Sources: []config.Source{mapSource{name: "etcd", tree: map[string]any{"clients": map[string]any{"payments": map[string]any{}}}}},
			Environ: environ("SVC_CLIENTS__PAYMENTS__TIMEOUT=1s", "SVC_CLIENTS__PAYMENT__TIMEOUT=2s")},
			`env SVC_CLIENTS__PAYMENT__TIMEOUT: no client "payment"; did you mean payments?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fes := loadErrors(t, tt.l)
			if len(fes) != 1 || fes[0].Error() != tt.want {
				t.Errorf("got %q, want the one error %q", fes, tt.want)
			}
		})
	}
}

// TestErrorsSortedByLineThenKey guards the order a reader of the file
// expects: by line, then the errors without one (env, flags) by key.
func TestErrorsSortedByLineThenKey(t *testing.T) {
	file := writeConfig(t, `defaults:
  retry:
    initial_backoff: 2s
    max_backoff: 1s
clients:
  billing:
    timeot: 1s
    retry: {max_retries: -2}
  alpha:
    logging: {level: trace}
`)
	fes := loadErrors(t, config.Loader{File: file, EnvPrefix: "SB_", Environ: environ(
		"SB_CLIENTS__BILLING__BULKHEAD__MAX_CONCURRENT=-1", "SB_CLIENTS__ALPHA__TIMEOUT=x")})
	var got []string
	for _, fe := range fes {
		got = append(got, fe.Error())
	}
	want := []string{
		"defaults.retry.initial_backoff: must be <= max_backoff (1s), got 2s (line 3)",
		"clients.billing.timeot: unknown key (line 7); did you mean timeout?",
		"clients.billing.retry.max_retries: must be >= 0, got -2 (line 8)",
		`clients.alpha.logging.level: must be one of debug, info, off, got "trace" (line 10)`,
		`env SB_CLIENTS__ALPHA__TIMEOUT: must be a duration string like "500ms", got "x"`,
		"clients.billing.bulkhead.max_concurrent: must be >= 0, got -1 (set by env SB_CLIENTS__BILLING__BULKHEAD__MAX_CONCURRENT)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\ngot  %q\nwant %q", got, want)
	}
}

// TestEveryErrorOfALoadAtOnce guards that a referenced file's problem is
// not held back until the rest of the file is fixed.
func TestEveryErrorOfALoadAtOnce(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	twoLines := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(twoLines, []byte("a\nb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	junk := writeConfig(t, "not PEM")
	file := writeConfig(t, `clients:
  billing:
    retry: {max_retires: 2}
    auth:
      host: billing.internal
      bearer_token_file: `+empty+`
  search:
    tls: {ca_file: `+junk+`}
    auth:
      host: search.internal
      basic: {username: "svc:ops", password_file: `+twoLines+`}
`)
	mustFail(t, config.Loader{File: file},
		"5 errors",
		"clients.billing.retry.max_retires: unknown key (line 3); did you mean max_retries?",
		"clients.billing.auth.bearer_token_file: file "+empty+" is empty (line 6)",
		"clients.search.tls.ca_file: no PEM certificate in "+junk+" (line 8)",
		`clients.search.auth.basic.username: must not contain ":"`,
		"clients.search.auth.basic.password_file: file "+twoLines+" holds more than one line (or a NUL byte) (line 11)",
		"clients.search.auth.basic.username: must not contain \":\" (RFC 7617: the server would split the credential at it) (line 11)",
	)
}

// TestCrossFieldErrorsCarryALine guards that an error about two keys is
// placed in the file: by the key it names, else by the other key.
func TestCrossFieldErrorsCarryALine(t *testing.T) {
	file := writeConfig(t, `defaults:
  timeout: 2s
  retry:
    attempt_timeout: 3s
clients:
  billing:
    auth: {bearer_token: "t"}
  search:
    tls: {cert_file: /nonexistent/cert.pem}
`)
	mustFail(t, config.Loader{File: file},
		"defaults.retry.attempt_timeout: must be less than timeout (2s), got 3s (line 4)",
		"clients.billing.auth.host: must be set when a credential is set: the credential is sent to this host only (line 7)",
		"clients.search.tls.key_file: must be set when cert_file is set (line 9)",
	)
	// With timeout set by env over the file, the line stays attempt_timeout's.
	mustFail(t, config.Loader{File: file, EnvPrefix: "SB_", Environ: environ("SB_DEFAULTS__TIMEOUT=1s")},
		"defaults.retry.attempt_timeout: must be less than timeout (1s), got 3s (line 4)")
}

// TestBulkheadLimitErrorsNameOrigin guards that the adaptive bulkhead's
// cross-field errors name the key path, the value and where it was set:
// the file's line, or the env variable that set the other key.
func TestBulkheadLimitErrorsNameOrigin(t *testing.T) {
	file := writeConfig(t, `clients:
  billing:
    bulkhead:
      mode: adaptive
      min_limit: 10
      initial_limit: 5
  search:
    bulkhead: {mode: adaptive, min_limit: 300}
`)
	mustFail(t, config.Loader{File: file},
		"clients.billing.bulkhead.initial_limit: must be >= min_limit (10), got 5 (line 6)",
		"clients.search.bulkhead.min_limit: must be <= max_limit (200), got 300 (line 8)",
	)
	ok := writeConfig(t, "clients:\n  billing:\n    bulkhead: {mode: adaptive}\n")
	mustFail(t, config.Loader{File: ok, EnvPrefix: "SB_", Environ: environ("SB_CLIENTS__BILLING__BULKHEAD__MAX_LIMIT=8")},
		"clients.billing.bulkhead.initial_limit: must be <= max_limit (8), got 20 (set by env SB_CLIENTS__BILLING__BULKHEAD__MAX_LIMIT)")
}

func TestBasicUsernameWithColonRejected(t *testing.T) {
	c := config.Default()
	c.Auth.Host, c.Auth.Basic.Username, c.Auth.Basic.Password = "h", "a:b", "p"
	err := config.Config{Defaults: c}.Validate()
	want := `defaults.auth.basic.username: must not contain ":"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Validate: got %v, want an error containing %q", err, want)
	}
	c.Auth.Basic.Username = "svc"
	if err := (config.Config{Defaults: c}).Validate(); err != nil {
		t.Errorf("Validate of username svc: got %v, want nil", err)
	}
	mustFail(t, config.Loader{EnvPrefix: "SB_", Environ: environ(
		"SB_DEFAULTS__AUTH__HOST=h", "SB_DEFAULTS__AUTH__BASIC__USERNAME=a:b")},
		`defaults.auth.basic.username: must not contain ":" (RFC 7617: the server would split the credential at it) (set by env SB_DEFAULTS__AUTH__BASIC__USERNAME)`)
}

// TestSourceErrorsNamedBySource guards that a Source's errors name the
// Source and key, not the YAML file.
func TestSourceErrorsNamedBySource(t *testing.T) {
	file := writeConfig(t, "clients:\n  billing: {}\n")
	src := mapSource{name: "etcd", tree: map[string]any{"clients": map[string]any{"billing": map[string]any{
		"timeout": "soon", "retry": map[string]any{"max_retries": -1}}}}}
	_, err := config.Loader{File: file, Sources: []config.Source{src}}.Load()
	want := "config: 2 errors:\n" +
		"source etcd: clients.billing.retry.max_retries: must be >= 0, got -1\n" +
		`source etcd: clients.billing.timeout: must be a duration string like "500ms", got "soon"`
	if err == nil || err.Error() != want {
		t.Errorf("Load:\ngot  %v\nwant %s", err, want)
	}
}

// TestHeaderNameCollisionsRejected guards that two headers switchboard
// writes on an attempt cannot share a name (ignoring case): attempt_header
// and an enabled idempotency key's header (its default included),
// deadline.header and either of them; on a client and on a route, each
// error naming the path, the value and where it was set. A disabled
// idempotency key collides with nothing.
func TestHeaderNameCollisionsRejected(t *testing.T) {
	file := writeConfig(t, `clients:
  billing:
    retry:
      attempt_header: idempotency-key
      idempotency_key: {enabled: true}
  search:
    deadline: {header: X-Timeout-Ms}
    retry:
      attempt_header: x-timeout-ms
  orders:
    deadline: {header: X-Key}
    routes:
      "POST /v1/":
        retry:
          idempotency_key: {enabled: true, header: x-key}
  quiet:
    deadline: {header: Idempotency-Key}
    retry:
      attempt_header: Idempotency-Key
`)
	err := mustFail(t, config.Loader{File: file},
		`clients.billing.retry.attempt_header: must differ from retry.idempotency_key.header ("Idempotency-Key"; names compare ignoring case), got "idempotency-key" (line 4)`,
		`clients.search.retry.attempt_header: must differ from deadline.header ("X-Timeout-Ms"; names compare ignoring case), got "x-timeout-ms" (line 9)`,
		`clients.orders.routes."POST /v1/".retry.idempotency_key.header: must differ from deadline.header ("X-Key"; names compare ignoring case) while idempotency_key is enabled, got "x-key" (line 15)`,
		`clients.quiet.retry.attempt_header: must differ from deadline.header`,
	)
	if strings.Contains(err.Error(), "clients.quiet.retry.idempotency_key") || strings.Contains(err.Error(), "clients.quiet.retry.attempt_header: must differ from retry.idempotency_key") {
		t.Errorf("Load error:\n%v\nwant no collision with a disabled idempotency key", err)
	}
	env := writeConfig(t, "clients:\n  billing:\n    retry: {attempt_header: X-Attempt}\n")
	mustFail(t, config.Loader{File: env, EnvPrefix: "SB_", Environ: environ("SB_CLIENTS__BILLING__DEADLINE__HEADER=x-attempt")},
		`clients.billing.retry.attempt_header: must differ from deadline.header ("x-attempt"; names compare ignoring case), got "X-Attempt" (line 3)`)
}
