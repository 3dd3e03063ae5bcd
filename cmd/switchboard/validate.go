package main

import (
	_ "embed"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

const validateAbout = `Check FILE as the service would load it: every key, type, range and contradiction,
every referenced file readable and well-formed (secret files of one line, PEM CA bundle
and key pair). Each error names the full key path and the line in FILE, or the env
variable, flag or Source that set it, and for a typo the nearest valid key. All errors
are reported together, sorted by line.

With --env-prefix the real environment's variables with that prefix are read too, and
each --set overrides one key, exactly as the service's env and flag layers do. Each
--env NAME=VALUE adds a variable; a NAME that does not start with the prefix in force
(--env-prefix, else SWITCHBOARD_) followed by DEFAULTS__ or CLIENTS__ is a usage error,
since the service would not read it.
With --section PATH the client config is read from under that key of FILE, the
application's own config file (as the service's Options.Section).

Exit codes, for CI and pre-commit hooks:
  0  valid (warnings, if any, do not fail)
  1  invalid: at least one error, all of them printed
  2  usage error: bad flags or arguments; nothing was checked

--json prints one object for machines; --json-schema prints its JSON Schema.

Examples:
  switchboard validate clients.yaml
  switchboard validate clients.yaml --env-prefix SWITCHBOARD_
  switchboard validate clients.yaml --set clients.billing.timeout=2s --json
  switchboard validate deploy/clients.yaml || exit 1     # a CI step
  switchboard validate config.yaml --section http_clients --env-prefix SVC_ --env SVC_CLIENTS__BILLING__TIMEOUT=2s
`

// validateSchema is the JSON Schema of validate's --json output
// (validateResult), printed by --json-schema.
//
//go:embed validate.schema.json
var validateSchema []byte

// validateResult is validate's --json output; validate.schema.json is
// its schema: keep the two in step (TestValidateJSONSchemaMatchesOutput).
type validateResult struct {
	File     string      `json:"file"`
	Valid    bool        `json:"valid"`
	Clients  []string    `json:"clients"`
	Warnings []string    `json:"warnings,omitempty"`
	Errors   []jsonError `json:"errors,omitempty"`
}

func runValidate(args, env []string, stdout, stderr io.Writer) int {
	lf := newFlags("validate", "validate FILE [--section PATH] [--env-prefix PREFIX] [--set key=value ...] [--json] | --json-schema", validateAbout, stderr)
	schema := lf.fs.Bool("json-schema", false, "print the JSON Schema (draft 2020-12) of the --json output and exit")
	pos, code, stop := parse(lf.fs, args, 0, 1, stdout, stderr)
	if stop {
		return code
	}
	var file string
	if len(pos) > 0 {
		file = pos[0]
	}
	if lf.badEnv(stderr, file) {
		return exitUsage
	}
	if *schema {
		stdout.Write(validateSchema)
		return exitOK
	}
	if len(pos) == 0 { // as parse says it, FILE being optional only with --json-schema
		fmt.Fprintf(stderr, "switchboard validate: got 0 arguments, want 1\n\n")
		lf.fs.Usage()
		return exitUsage
	}
	cfg, err := lf.load(file, env)
	if err != nil {
		return lf.reportLoadError(stdout, file, err)
	}
	names := sortedNames(cfg)
	warnings := warningsOf(cfg)
	if lf.json {
		writeJSON(stdout, validateResult{File: file, Valid: true, Clients: names, Warnings: warnings})
		return exitOK
	}
	n := fmt.Sprintf("%d clients", len(names))
	if len(names) == 1 {
		n = "1 client"
	}
	fmt.Fprintf(stdout, "%s: ok: %s: %s\n", file, n, strings.Join(names, ", "))
	for _, w := range warnings {
		fmt.Fprintf(stdout, "  warning: %s\n", w)
	}
	return exitOK
}

// warningsOf lists what is valid but worth a second look: what the service
// logs at WARN on every load.
func warningsOf(cfg config.Config) []string {
	var out []string
	if cfg.Defaults.TLS.InsecureSkipVerify {
		out = append(out, "defaults.tls.insecure_skip_verify is true: certificates are not verified")
	}
	for _, name := range sortedNames(cfg) {
		if cfg.Clients[name].TLS.InsecureSkipVerify && !cfg.Defaults.TLS.InsecureSkipVerify {
			out = append(out, "clients."+name+".tls.insecure_skip_verify is true: certificates are not verified")
		}
	}
	// An idempotency key enabled with methods: [] keys nothing; named
	// where it is set (defaults, a client, a route), not where inherited.
	const keysNothing = " is enabled with methods: []: no request gets a key"
	noop := func(r middleware.RetrySettings) bool {
		k := r.IdempotencyKey
		return k.Enabled && k.Methods != nil && len(k.Methods) == 0
	}
	defNoop := noop(cfg.Defaults.Retry)
	if defNoop {
		out = append(out, "defaults.retry.idempotency_key"+keysNothing)
	}
	for _, name := range sortedNames(cfg) {
		c := cfg.Clients[name]
		cNoop := noop(c.Retry)
		if cNoop && !defNoop {
			out = append(out, "clients."+name+".retry.idempotency_key"+keysNothing)
		}
		for _, p := range slices.Sorted(maps.Keys(c.Routes)) {
			if noop(c.Routes[p].Retry) && !cNoop {
				out = append(out, "clients."+name+"."+config.RouteKey(p, "retry.idempotency_key")+keysNothing)
			}
		}
	}
	return out
}
