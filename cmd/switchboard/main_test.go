package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/switchboard-http/switchboard/internal/wants"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// The module's testdata, as the tests (which run in this directory) see it.
const (
	valid   = "../../testdata/valid/"
	invalid = "../../testdata/invalid/"
)

// secretMarkers are parts of secret values in testdata files; none may
// appear in any output of any command.
var secretMarkers = []string{
	"s3cr3t", "hunter2", "tok-123-never-shown", "tok-456-never-shown",
	"not-a-real-password", "not-a-real-token",
}

// result is one in-process run of the tool.
type result struct {
	code           int
	stdout, stderr string
}

func runTool(t *testing.T, env []string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, env, &stdout, &stderr)
	out := result{code, stdout.String(), stderr.String()}
	for _, m := range secretMarkers {
		if strings.Contains(out.stdout, m) || strings.Contains(out.stderr, m) {
			t.Errorf("switchboard %s: output holds secret %q:\n%s%s", strings.Join(args, " "), m, out.stdout, out.stderr)
		}
	}
	return out
}

// golden compares got with testdata/golden/name.golden, or rewrites it
// under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (run go test ./cmd/switchboard -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test ./cmd/switchboard -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// goldenText is what a golden file holds: exit code, stdout and stderr.
func (r result) goldenText() string {
	var b strings.Builder
	b.WriteString("exit " + string(rune('0'+r.code)) + "\n-- stdout --\n" + r.stdout)
	if r.stderr != "" {
		b.WriteString("-- stderr --\n" + r.stderr)
	}
	return b.String()
}

func TestCommands(t *testing.T) {
	env := []string{
		"HOME=/home/ops",
		"SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=7",
		"SWITCHBOARD_DEFAULTS__TIMEOUT=20s",
	}
	tests := []struct {
		name     string
		env      []string
		args     []string
		wantCode int
	}{
		{"help", nil, []string{"--help"}, exitOK},
		{"no_command", nil, nil, exitUsage},
		{"unknown_command", nil, []string{"lint", "x.yaml"}, exitUsage},

		{"validate_help", nil, []string{"validate", "--help"}, exitOK},
		{"validate_no_file", nil, []string{"validate"}, exitUsage},
		{"validate_bad_flag", nil, []string{"validate", "--strict", valid + "clients.yaml"}, exitUsage},
		{"validate_clients", nil, []string{"validate", valid + "clients.yaml"}, exitOK},
		{"validate_full", nil, []string{"validate", valid + "full.yaml"}, exitOK},
		{"validate_minimal", nil, []string{"validate", valid + "minimal.yaml"}, exitOK},
		{"validate_warnings", nil, []string{"validate", "testdata/warnings.yaml"}, exitOK},
		{"validate_missing_file", nil, []string{"validate", "no-such-file.yaml"}, exitInvalid},
		{"validate_json_ok", nil, []string{"validate", "--json", valid + "clients.yaml"}, exitOK},
		{"validate_json_errors", nil, []string{"validate", "--json", invalid + "many_errors.yaml"}, exitInvalid},
		{"validate_json_schema", nil, []string{"validate", "--json-schema"}, exitOK},
		{"validate_env", env, []string{"validate", valid + "clients.yaml", "--env-prefix", "SWITCHBOARD_"}, exitOK},
		{"validate_env_ignored_without_prefix", []string{"SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=-1"},
			[]string{"validate", valid + "clients.yaml"}, exitOK},
		{"validate_env_bad_value", []string{"SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=-1"},
			[]string{"validate", valid + "clients.yaml", "--env-prefix", "SWITCHBOARD_"}, exitInvalid},
		{"validate_env_typo", []string{"SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIE=1"},
			[]string{"validate", valid + "clients.yaml", "--env-prefix", "SWITCHBOARD_"}, exitInvalid},
		{"validate_set", nil, []string{"validate", valid + "clients.yaml", "--set", "clients.billing.timeout=2s"}, exitOK},
		{"validate_set_contradiction", nil, []string{"validate", valid + "clients.yaml", "--set", "clients.billing.timeout=500ms"}, exitInvalid},
		{"validate_set_unknown_key", nil, []string{"validate", valid + "clients.yaml", "--set", "clients.billing.retry.max_retires=1"}, exitInvalid},

		{"validate_env_outside_prefix", nil, []string{"validate", valid + "clients.yaml", "--env", "SVC_CLIENTS__BILLING__TIMEOUT=bogus"}, exitUsage},
		{"validate_env_outside_given_prefix", nil, []string{"validate", valid + "clients.yaml", "--env-prefix", "APP_", "--env", "SVC_CLIENTS__BILLING__TIMEOUT=bogus"}, exitUsage},
		{"validate_env_single_underscore", nil, []string{"validate", valid + "clients.yaml", "--env-prefix", "SVC_", "--env", "SVC_CLIENTS_BILLING__TIMEOUT=bogus"}, exitUsage},
		{"validate_env_not_ours", nil, []string{"validate", valid + "clients.yaml", "--env-prefix", "SVC_", "--env", "SVC_CLIENT_BILLING__TIMEOUT=bogus"}, exitUsage},
		{"validate_env_not_ours_joined", nil, []string{"validate", valid + "clients.yaml", "--env-prefix", "SVC_", "--env", "SVC_CLIENTSBILLING__TIMEOUT=bogus"}, exitUsage},
		{"validate_env_not_ours_one_underscore", nil, []string{"validate", valid + "clients.yaml", "--env-prefix", "SVC_", "--env", "SVC_CLENTS_BILLING_TIMEOUT=bogus"}, exitUsage},
		{"explain_env_not_ours", nil, []string{"explain", valid + "clients.yaml", "billing", "--env-prefix", "SVC_", "--env", "SVC_DEFAULTS_TIMEOUT=2s"}, exitUsage},
		{"validate_env_given_prefix", nil, []string{"validate", valid + "clients.yaml", "--env-prefix", "SVC_", "--env", "SVC_CLIENTS__BILLING__TIMEOUT=bogus"}, exitInvalid},
		{"validate_section", nil, []string{"validate", "testdata/app.yaml", "--section", "http_clients"}, exitOK},
		{"validate_section_invalid", nil, []string{"validate", "testdata/app_invalid.yaml", "--section", "http_clients"}, exitInvalid},
		{"validate_section_typo", nil, []string{"validate", "testdata/app.yaml", "--section", "http_client"}, exitInvalid},
		{"validate_app_without_section", nil, []string{"validate", "testdata/app.yaml"}, exitInvalid},
		{"explain_changed", env, []string{"explain", valid + "clients.yaml", "billing", "--changed", "--env-prefix", "SWITCHBOARD_"}, exitOK},
		{"explain_section_changed", nil, []string{"explain", "testdata/app.yaml", "--section", "http_clients", "--changed"}, exitOK},
		{"explain_section_changed_json", nil, []string{"explain", "testdata/app.yaml", "billing", "--section", "http_clients", "--changed", "--json"}, exitOK},
		{"diff_section_base_url", nil, []string{"diff", "--section", "http_clients", "testdata/app.yaml", "testdata/app_failover.yaml"}, exitOK},
		{"diff_section", nil, []string{"diff", "--section", "http_clients", "testdata/app.yaml", "testdata/app.yaml"}, exitOK},
		{"schema_section", nil, []string{"schema", "--section", "http_clients"}, exitOK},

		{"explain_help", nil, []string{"explain", "-h"}, exitOK},
		{"explain_clients", nil, []string{"explain", valid + "clients.yaml"}, exitOK},
		{"explain_one", nil, []string{"explain", valid + "clients.yaml", "search-v2"}, exitOK},
		{"explain_undefined", nil, []string{"explain", valid + "minimal.yaml", "payments"}, exitOK},
		{"explain_layers", env, []string{"explain", valid + "clients.yaml", "billing", "--env-prefix", "SWITCHBOARD_", "--set", "clients.billing.timeout=4s"}, exitOK},
		{"explain_json", env, []string{"explain", "--json", valid + "clients.yaml", "billing", "--env-prefix", "SWITCHBOARD_"}, exitOK},
		{"explain_secrets", nil, []string{"explain", "testdata/secrets.yaml"}, exitOK},
		{"explain_invalid", nil, []string{"explain", invalid + "unknown_key.yaml"}, exitInvalid},

		{"diff_help", nil, []string{"diff", "--help"}, exitOK},
		{"diff_one_file", nil, []string{"diff", valid + "clients.yaml"}, exitUsage},
		{"diff_same", nil, []string{"diff", valid + "clients.yaml", valid + "clients.yaml"}, exitOK},
		{"diff_tuned", nil, []string{"diff", valid + "clients.yaml", "testdata/tuned.yaml"}, exitOK},
		{"diff_tuned_json", nil, []string{"diff", "--json", valid + "clients.yaml", "testdata/tuned.yaml"}, exitOK},
		{"diff_minimal_to_clients", nil, []string{"diff", valid + "minimal.yaml", valid + "clients.yaml"}, exitOK},
		{"diff_secrets_rotated", nil, []string{"diff", "testdata/secrets.yaml", "testdata/secrets_rotated.yaml"}, exitOK},
		{"diff_invalid_new", nil, []string{"diff", valid + "clients.yaml", invalid + "many_errors.yaml"}, exitInvalid},

		{"schema_help", nil, []string{"schema", "--help"}, exitOK},
		{"schema", nil, []string{"schema"}, exitOK},
		{"schema_markdown", nil, []string{"schema", "--markdown"}, exitOK},
		{"schema_extra_arg", nil, []string{"schema", "x.yaml"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runTool(t, tt.env, tt.args...)
			if r.code != tt.wantCode {
				t.Errorf("exit code: got %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			golden(t, tt.name, r.goldenText())
		})
	}
}

// TestValidateInvalidTestdata runs every file of testdata/invalid through
// validate: exit code 1, each of the file's "# want:" lines in the output,
// and the output as in its golden file.
func TestValidateInvalidTestdata(t *testing.T) {
	files, err := filepath.Glob(invalid + "*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("glob: got %d files, err %v; want some", len(files), err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			r := runTool(t, nil, "validate", path)
			if r.code != exitInvalid {
				t.Errorf("exit code: got %d, want %d", r.code, exitInvalid)
			}
			for _, want := range wants.Lines(t, path) {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, r.stdout)
				}
			}
			golden(t, "validate_invalid_"+name, r.goldenText())

			j := runTool(t, nil, "validate", "--json", path)
			var res validateResult
			if err := json.Unmarshal([]byte(j.stdout), &res); err != nil {
				t.Fatalf("--json output is not JSON: %v\n%s", err, j.stdout)
			}
			if j.code != exitInvalid || res.Valid || len(res.Errors) == 0 {
				t.Errorf("--json: got exit %d, valid %v, %d errors; want 1, false, some", j.code, res.Valid, len(res.Errors))
			}
		})
	}
}

// TestValidTestdataEveryCommand runs explain and schema-free commands on
// every valid file: each succeeds and no secret leaks (runTool checks).
func TestValidTestdataEveryCommand(t *testing.T) {
	files, _ := filepath.Glob(valid + "*.yaml")
	files = append(files, "testdata/secrets.yaml", "testdata/secrets_rotated.yaml", "testdata/tuned.yaml")
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			for _, args := range [][]string{
				{"validate", path},
				{"explain", path},
				{"explain", "--json", path},
				{"diff", path, "testdata/secrets.yaml"},
				{"diff", "--json", "testdata/secrets.yaml", path},
			} {
				if r := runTool(t, nil, args...); r.code != exitOK {
					t.Errorf("switchboard %s: got exit %d, want 0\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
				}
			}
		})
	}
}

// --env lets a reviewer check an env override without setting it for real:
// it implies the SWITCHBOARD_ prefix, wins over the real environment, and a
// malformed one is an error that does not echo its text.
func TestEnvFlag(t *testing.T) {
	file := filepath.Join("..", "..", "testdata", "valid", "clients.yaml")
	tests := []struct {
		name string
		real []string
		args []string
		code int
		want string
	}{
		{"bad value rejected", nil, []string{"validate", file, "--env", "SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=-1"}, exitInvalid,
			"clients.billing.retry.max_retries: must be >= 0, got -1"},
		{"wins over the real env", []string{"SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=2"},
			[]string{"explain", file, "billing", "--env", "SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=7"}, exitOK,
			"env SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES"},
		{"malformed", nil, []string{"validate", file, "--env", "s3cr3t-no-equals"}, exitUsage, "want NAME=VALUE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tt.args, tt.real, &out, &errOut)
			got := out.String() + errOut.String()
			if code != tt.code || !strings.Contains(got, tt.want) {
				t.Fatalf("exit %d, output:\n%s\nwant exit %d and %q", code, got, tt.code, tt.want)
			}
			if strings.Contains(got, "s3cr3t") {
				t.Fatalf("output echoes the malformed --env text:\n%s", got)
			}
		})
	}
	var out bytes.Buffer
	run([]string{"explain", file, "billing", "--env", "SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=7"}, []string{"SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=2"}, &out, io.Discard)
	if !regexp.MustCompile(`retry\.max_retries\s+7\s`).MatchString(out.String()) {
		t.Fatalf("explain: want max_retries 7 from --env, got:\n%s", out.String())
	}
}
