package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/config"
)

// FuzzEnv feeds arbitrary variable names and values under the prefix, over
// a small valid file. Load must not panic and must return either a Config
// that passes Validate or an error made of FieldErrors that all have a Path.
func FuzzEnv(f *testing.F) {
	seeds := [][4]string{
		{"CLIENTS__BILLING_V2__RETRY__MAX_RETRIES", "5", "DEFAULTS__TIMEOUT", "2s"},
		{"CLIENTS__BILLING__HEADERS__X_TEAM", "payments", "DEFAULTS__RETRY__RETRYABLE_STATUS", "502,503"},
		{"clients__billing-v2__timeout", "1s", "CLIENTS__BILLING_V2__RETRY__ATTEMPT_TIMEOUT", "2s"},
		{"CLIENTS__", "x", "CLIENTS____TIMEOUT", "1s"},
		{"DEFAULTS__RETRY", "3", "DEFAULTS__RETRY__BUDGET__RATIO", "NaN"},
		{"DEFAULTS__HEADERS", "a", "DEFAULTS__HEADERS__", ""},
		{"CLIENTS__A.B__TIMEOUT", "1s", "CLIENTS__BILLING-V2__TIMEOUT", "1s"},
		{"DEFAULTS__CIRCUIT_BREAKER__FAILURE_RATE_THRESHOLD", "1.5", "DEFAULTS__AUTH__BEARER_TOKEN", "s3cr3t"},
		{"DEFAULTS__RETRY__MAX_RETRIES", "99999999999999999999", "DEFAULTS__TLS__MIN_VERSION", "1.9"},
		{"DEFAULTS__RETRY__MAX_RETRIES", "-1", "clients__x__retry__max_retries", " 2 "},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2], s[3])
	}
	path := filepath.Join(f.TempDir(), "clients.yaml")
	if err := os.WriteFile(path, []byte("clients:\n  billing-v2:\n    timeout: 10s\n  search: {}\n"), 0o600); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name1, value1, name2, value2 string) {
		env := []string{"SB_" + name1 + "=" + value1, "SB_" + name2 + "=" + value2, "OTHER=1"}
		cfg, err := config.Loader{File: path, EnvPrefix: "SB_", Environ: environ(env...)}.Load()
		if err == nil {
			if verr := cfg.Validate(); verr != nil {
				t.Fatalf("Load: got a Config that fails Validate: %v", verr)
			}
			return
		}
		fes := config.FieldErrors(err)
		if len(fes) == 0 {
			t.Fatalf("Load: got an error without FieldErrors: %v", err)
		}
		for _, fe := range fes {
			if fe.Path == "" {
				t.Fatalf("Load: got a FieldError without Path: %v", fe)
			}
			if strings.Contains(fe.Error(), "s3cr3t") && strings.Contains(strings.ToUpper(name1+name2), "BEARER_TOKEN") {
				t.Fatalf("Load: an error shows a secret value: %v", fe)
			}
		}
	})
}
