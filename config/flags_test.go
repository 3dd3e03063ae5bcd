package config_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/switchboard-http/switchboard/config"
)

func TestFlagLayer(t *testing.T) {
	file := "clients:\n  billing:\n    timeout: 5s\n    retry: {max_retries: 1}\n"
	appFlags := func(fs *pflag.FlagSet) {
		fs.Duration("clients.billing.timeout", 99*time.Second, "")
		fs.IntSlice("defaults.retry.retryable_status", nil, "")
		fs.String("listen", ":8080", "the app's own flag")
		fs.Int("retries", 0, "the app's own flag")
	}
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, cfg config.Config)
	}{
		{
			name: "--set is repeatable and the last one wins",
			args: []string{"--set", "clients.billing.retry.max_retries=3", "--set", "defaults.headers.x-team=core",
				"--set=clients.billing.retry.max_retries=4", "--set", "clients.billing.retry.retryable_methods=GET,PUT"},
			check: func(t *testing.T, cfg config.Config) {
				b := client(t, cfg, "billing")
				if got, want := b.Retry.MaxRetries, 4; got != want {
					t.Errorf("max_retries: got %d, want %d", got, want)
				}
				if got, want := b.Headers, (config.Headers{"X-Team": "core"}); !reflect.DeepEqual(got, want) {
					t.Errorf("headers: got %v, want %v", got, want)
				}
				if got, want := b.Retry.RetryableMethods, []string{"GET", "PUT"}; !reflect.DeepEqual(got, want) {
					t.Errorf("retryable_methods: got %v, want %v", got, want)
				}
			},
		},
		{
			name: "flags named by key paths are taken when set",
			args: []string{"--clients.billing.timeout=2s", "--defaults.retry.retryable_status=500,501"},
			check: func(t *testing.T, cfg config.Config) {
				b := client(t, cfg, "billing")
				if got, want := b.Timeout, 2*time.Second; got != want {
					t.Errorf("timeout: got %v, want %v", got, want)
				}
				if got, want := b.Retry.RetryableStatus, []int{500, 501}; !reflect.DeepEqual(got, want) {
					t.Errorf("retryable_status: got %v, want %v", got, want)
				}
			},
		},
		{
			name: "--set beats a path-named flag",
			args: []string{"--clients.billing.timeout=2s", "--set", "clients.billing.timeout=3s"},
			check: func(t *testing.T, cfg config.Config) {
				if got, want := client(t, cfg, "billing").Timeout, 3*time.Second; got != want {
					t.Errorf("timeout: got %v, want %v", got, want)
				}
			},
		},
		{
			name: "unchanged flags change nothing and the app's own flags are ignored",
			args: []string{"--listen=:9090", "--retries=7"},
			check: func(t *testing.T, cfg config.Config) {
				b := client(t, cfg, "billing")
				if b.Timeout != 5*time.Second || b.Retry.MaxRetries != 1 {
					t.Errorf("got timeout %v max_retries %d, want the file's 5s and 1", b.Timeout, b.Retry.MaxRetries)
				}
				if got, want := b.Retry.RetryableStatus, config.Default().Retry.RetryableStatus; !reflect.DeepEqual(got, want) {
					t.Errorf("retryable_status: got %v, want built-in %v", got, want)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, mustLoad(t, config.Loader{File: writeConfig(t, file), Flags: flagSet(t, appFlags, tt.args...)}))
		})
	}
}

func TestFlagLayerErrors(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		wants []string
	}{
		{"unknown key in --set", []string{"--set", "clients.billing.retry.max_retires=5"},
			[]string{"--set clients.billing.retry.max_retires: unknown key clients.billing.retry.max_retires; did you mean max_retries?"}},
		{"no = in --set", []string{"--set", "clients.billing.timeout"}, []string{`--set: want key=value`}},
		{"bad value in --set", []string{"--set", "defaults.timeout=soon"}, []string{`--set defaults.timeout: must be a duration string like "500ms", got "soon"`}},
		{"headers map as one key", []string{"--set", "defaults.headers=a"}, []string{"--set defaults.headers: is a map"}},
		{"bad client name", []string{"--set", "clients.a b.timeout=1s"}, []string{"client name"}},
		{"validation names the flag", []string{"--set", "defaults.bulkhead.max_concurrent=-3"},
			[]string{"defaults.bulkhead.max_concurrent: must be >= 0, got -3 (set by --set defaults.bulkhead.max_concurrent)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustFail(t, config.Loader{Flags: flagSet(t, nil, tt.args...)}, tt.wants...)
		})
	}
}

func TestRegisterFlagsTwice(t *testing.T) {
	fs := pflag.NewFlagSet("app", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	config.RegisterFlags(fs) // must not panic
	if fs.Lookup("set") == nil {
		t.Fatal("Lookup(set): got nil, want the flag")
	}
}
