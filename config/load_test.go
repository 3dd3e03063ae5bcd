package config_test

import (
	"errors"
	"io/fs"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/switchboard-http/switchboard/config"
)

func TestLoadBuiltinDefaultsEqualDefault(t *testing.T) {
	tests := []struct {
		name string
		l    func(t *testing.T) config.Loader
	}{
		{"no layers", func(*testing.T) config.Loader { return config.Loader{} }},
		{"file with an empty client", func(t *testing.T) config.Loader {
			return config.Loader{File: writeConfig(t, "clients:\n  billing:\n")}
		}},
		{"empty env and flags", func(t *testing.T) config.Loader {
			return config.Loader{EnvPrefix: "SWITCHBOARD_", Environ: environ("PATH=/bin"), Flags: flagSet(t, nil)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, tt.l(t))
			if got, want := cfg.Defaults, config.Default(); !reflect.DeepEqual(got, want) {
				t.Errorf("Defaults:\ngot  %+v\nwant %+v", got, want)
			}
			for name, c := range cfg.Clients {
				if got, want := c, config.Default(); !reflect.DeepEqual(got, want) {
					t.Errorf("client %s:\ngot  %+v\nwant %+v", name, got, want)
				}
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate: got %v, want nil", err)
			}
		})
	}
}

func TestLoadLayering(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		env   []string
		args  []string
		check func(t *testing.T, cfg config.Config)
	}{
		{
			name: "file overrides built-in defaults",
			file: "defaults:\n  timeout: 10s\n  retry: {max_retries: 7}\nclients:\n  billing: {}\n",
			check: func(t *testing.T, cfg config.Config) {
				b := client(t, cfg, "billing")
				if got, want := cfg.Defaults.Timeout, 10*time.Second; got != want {
					t.Errorf("defaults timeout: got %v, want %v", got, want)
				}
				if got, want := b.Timeout, 10*time.Second; got != want {
					t.Errorf("billing timeout: got %v, want %v", got, want)
				}
				if got, want := b.Retry.MaxRetries, 7; got != want {
					t.Errorf("billing max_retries: got %d, want %d", got, want)
				}
				if got, want := b.Retry.MaxBackoff, config.Default().Retry.MaxBackoff; got != want {
					t.Errorf("billing max_backoff: got %v, want built-in %v", got, want)
				}
			},
		},
		{
			name: "client overrides defaults key by key",
			file: "defaults:\n  retry: {max_retries: 7, initial_backoff: 1s}\nclients:\n  billing:\n    retry: {max_retries: 2}\n",
			check: func(t *testing.T, cfg config.Config) {
				b := client(t, cfg, "billing")
				if got, want := b.Retry.MaxRetries, 2; got != want {
					t.Errorf("max_retries: got %d, want %d", got, want)
				}
				if got, want := b.Retry.InitialBackoff, time.Second; got != want {
					t.Errorf("initial_backoff: got %v, want %v (inherited)", got, want)
				}
			},
		},
		{
			name: "explicit zero, false, empty string and empty list in a client override",
			file: `defaults:
  timeout: 10s
  transport: {force_http2: true, proxy_url: "http://proxy:3128"}
  retry: {max_retries: 5, retry_all_methods: true, retryable_status: [500]}
clients:
  billing:
    timeout: 0s
    transport: {force_http2: false, proxy_url: ""}
    retry: {max_retries: 0, retry_all_methods: false, retryable_status: []}
`,
			check: func(t *testing.T, cfg config.Config) {
				b := client(t, cfg, "billing")
				if b.Timeout != 0 || b.Transport.ForceHTTP2 || b.Transport.ProxyURL != "" ||
					b.Retry.MaxRetries != 0 || b.Retry.RetryAllMethods {
					t.Errorf("got timeout=%v force_http2=%v proxy_url=%q max_retries=%d retry_all_methods=%v, want all zero",
						b.Timeout, b.Transport.ForceHTTP2, b.Transport.ProxyURL, b.Retry.MaxRetries, b.Retry.RetryAllMethods)
				}
				if b.Retry.RetryableStatus == nil || len(b.Retry.RetryableStatus) != 0 {
					t.Errorf("retryable_status: got %#v, want []int{}", b.Retry.RetryableStatus)
				}
			},
		},
		{
			name: "headers merge key by key, case-insensitively",
			file: "defaults:\n  headers: {User-Agent: a/1, X-A: one}\nclients:\n  billing:\n    headers: {x-a: two, X-B: three}\n",
			check: func(t *testing.T, cfg config.Config) {
				got := client(t, cfg, "billing").Headers
				want := config.Headers{"User-Agent": "a/1", "X-A": "two", "X-B": "three"}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("headers: got %v, want %v", got, want)
				}
			},
		},
		{
			name: "lists replace",
			file: "defaults:\n  retry: {retryable_status: [500, 502]}\nclients:\n  billing:\n    retry: {retryable_status: [503]}\n",
			check: func(t *testing.T, cfg config.Config) {
				if got, want := client(t, cfg, "billing").Retry.RetryableStatus, []int{503}; !reflect.DeepEqual(got, want) {
					t.Errorf("retryable_status: got %v, want %v", got, want)
				}
			},
		},
		{
			name: "env beats file",
			file: "clients:\n  billing:\n    retry: {max_retries: 1}\n",
			env:  []string{"SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=5"},
			check: func(t *testing.T, cfg config.Config) {
				if got, want := client(t, cfg, "billing").Retry.MaxRetries, 5; got != want {
					t.Errorf("max_retries: got %d, want %d", got, want)
				}
			},
		},
		{
			name: "flag beats env",
			file: "clients:\n  billing:\n    retry: {max_retries: 1}\n",
			env:  []string{"SWITCHBOARD_CLIENTS__BILLING__RETRY__MAX_RETRIES=5"},
			args: []string{"--set", "clients.billing.retry.max_retries=9"},
			check: func(t *testing.T, cfg config.Config) {
				if got, want := client(t, cfg, "billing").Retry.MaxRetries, 9; got != want {
					t.Errorf("max_retries: got %d, want %d", got, want)
				}
			},
		},
		{
			name: "env defaults do not beat a client's own file key but change clients without it",
			file: "defaults:\n  timeout: 10s\nclients:\n  billing:\n    timeout: 5s\n  search: {}\n",
			env:  []string{"SWITCHBOARD_DEFAULTS__TIMEOUT=2s"},
			check: func(t *testing.T, cfg config.Config) {
				if got, want := client(t, cfg, "billing").Timeout, 5*time.Second; got != want {
					t.Errorf("billing timeout: got %v, want %v", got, want)
				}
				if got, want := client(t, cfg, "search").Timeout, 2*time.Second; got != want {
					t.Errorf("search timeout: got %v, want %v", got, want)
				}
				if got, want := cfg.Defaults.Timeout, 2*time.Second; got != want {
					t.Errorf("defaults timeout: got %v, want %v", got, want)
				}
			},
		},
		{
			name: "a client with an empty section in the file follows defaults and the flags",
			file: "defaults:\n  retry: {max_retries: 4}\nclients:\n  fresh:\n",
			args: []string{"--set", "clients.fresh.timeout=3s"},
			check: func(t *testing.T, cfg config.Config) {
				c := client(t, cfg, "fresh")
				if c.Timeout != 3*time.Second || c.Retry.MaxRetries != 4 {
					t.Errorf("fresh: got timeout %v max_retries %d, want 3s and 4", c.Timeout, c.Retry.MaxRetries)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := config.Loader{File: writeConfig(t, tt.file), EnvPrefix: "SWITCHBOARD_", Environ: environ(tt.env...)}
			if tt.args != nil {
				l.Flags = flagSet(t, nil, tt.args...)
			}
			tt.check(t, mustLoad(t, l))
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name  string
		file  func(t *testing.T) string
		wants []string
		is    error
	}{
		{"missing file", func(t *testing.T) string { return t.TempDir() + "/nope.yaml" }, []string{"nope.yaml"}, fs.ErrNotExist},
		{"zero bytes", func(t *testing.T) string { return writeConfig(t, "") }, []string{"clients.yaml", "empty"}, config.ErrEmptyFile},
		{"whitespace and comments", func(t *testing.T) string { return writeConfig(t, "\n  \n# nothing\n") }, []string{"clients.yaml", "empty"}, config.ErrEmptyFile},
		{"document marker only", func(t *testing.T) string { return writeConfig(t, "---\n") }, []string{"clients.yaml", "empty"}, config.ErrEmptyFile},
		{"invalid yaml", func(t *testing.T) string { return writeConfig(t, "clients:\n  billing: [\n") }, []string{"clients.yaml", "line"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mustFail(t, config.Loader{File: tt.file(t)}, tt.wants...)
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v): got false, want true", err, tt.is)
			}
		})
	}
}

func TestLoadReportsAllErrorsAsFieldErrors(t *testing.T) {
	path := writeConfig(t, "clients:\n  billing:\n    timeout: -1s\n    retry: {max_retries: -1, jitter: nope}\n")
	_, err := config.Loader{File: path, EnvPrefix: "SB_", Environ: environ("SB_DEFAULTS__TIMOUT=1s")}.Load()
	fes := config.FieldErrors(err)
	got := map[string]bool{}
	for _, fe := range fes {
		got[fe.Path] = true
	}
	for _, want := range []string{"clients.billing.timeout", "clients.billing.retry.max_retries", "clients.billing.retry.jitter", "defaults.timout"} {
		if !got[want] {
			t.Errorf("FieldErrors: got paths %v, want one for %s", got, want)
		}
	}
	for _, fe := range fes {
		if fe.Path == "clients.billing.timeout" && fe.Line != 3 {
			t.Errorf("timeout error line: got %d, want 3", fe.Line)
		}
	}
}

func TestLoadFiles(t *testing.T) {
	token := writeConfig(t, "tok")
	ca, _ := pemPair(t)
	path := writeConfig(t, `defaults:
  tls: {ca_file: `+ca+`}
clients:
  billing:
    auth: {host: b.internal, bearer_token_file: `+token+`}
  search:
    auth: {host: s.internal, basic: {username: u, password_file: `+token+`}}
`)
	cfg := mustLoad(t, config.Loader{File: path})
	if got, want := cfg.Files, []string{path, token, ca}; !reflect.DeepEqual(got, want) {
		t.Errorf("Files: got %v, want %v", got, want)
	}
}

func TestLoadInputHash(t *testing.T) {
	file := "clients:\n  billing: {timeout: 1s}\n"
	load := func(t *testing.T, content string, env []string, args ...string) string {
		t.Helper()
		return mustLoad(t, config.Loader{
			File: writeConfig(t, content), EnvPrefix: "SB_", Environ: environ(env...),
			Flags: flagSet(t, func(fs *pflag.FlagSet) { fs.String("listen", ":8080", "") }, args...),
		}).InputHash
	}
	base := load(t, file, []string{"SB_DEFAULTS__TIMEOUT=2s", "HOME=/root"})
	tests := []struct {
		name     string
		hash     string
		wantSame bool
	}{
		{"same inputs", load(t, file, []string{"SB_DEFAULTS__TIMEOUT=2s", "HOME=/root"}), true},
		{"env in another order, unprefixed var changed", load(t, file, []string{"HOME=/home/x", "SB_DEFAULTS__TIMEOUT=2s"}), true},
		{"file changed", load(t, file+"# comment\n", []string{"SB_DEFAULTS__TIMEOUT=2s"}), false},
		{"env changed", load(t, file, []string{"SB_DEFAULTS__TIMEOUT=3s"}), false},
		{"flag set", load(t, file, []string{"SB_DEFAULTS__TIMEOUT=2s"}, "--set", "defaults.timeout=2s"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.hash == "" {
				t.Fatal("InputHash: got empty, want a digest")
			}
			if got := tt.hash == base; got != tt.wantSame {
				t.Errorf("InputHash equal to base: got %v, want %v", got, tt.wantSame)
			}
		})
	}
}

func TestLoaderConcurrentLoads(t *testing.T) {
	l := config.Loader{
		File:      writeConfig(t, "clients:\n  billing: {}\n"),
		EnvPrefix: "SB_", Environ: environ("SB_DEFAULTS__TIMEOUT=2s"),
		Flags: flagSet(t, nil, "--set", "defaults.retry.max_retries=1"),
	}
	done := make(chan string)
	for range 8 {
		go func() {
			cfg, err := l.Load()
			if err != nil {
				done <- err.Error()
				return
			}
			done <- cfg.InputHash
		}()
	}
	first := <-done
	for range 7 {
		if got := <-done; got != first {
			t.Errorf("concurrent Load: got %q, want %q", got, first)
		}
	}
}

func TestLoadClientsShareNothing(t *testing.T) {
	cfg := mustLoad(t, config.Loader{File: writeConfig(t, "defaults:\n  headers: {A: '1'}\nclients:\n  a: {}\n  b: {}\n")})
	a, b := client(t, cfg, "a"), client(t, cfg, "b")
	a.Retry.RetryableStatus[0] = 999
	a.Headers["A"] = "changed"
	if got := b.Retry.RetryableStatus[0]; got == 999 {
		t.Errorf("b retryable_status[0]: got %d, want unchanged by a", got)
	}
	if got := cfg.Defaults.Headers["A"]; got != "1" {
		t.Errorf("defaults header A: got %q, want %q", got, "1")
	}
}
