package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/switchboard-http/switchboard/config"
)

const validateAbout = `Check FILE as the service would load it: every key, type, range and contradiction,
every referenced file readable. Each error names the full key path, the line in FILE
where known, and for an unknown key the nearest valid one. Exit code 1 on any error.

With --env-prefix the real environment's variables with that prefix are read too, and
each --set overrides one key, exactly as the service's env and flag layers do.

Examples:
  switchboard validate clients.yaml
  switchboard validate clients.yaml --env-prefix SWITCHBOARD_
  switchboard validate clients.yaml --set clients.billing.timeout=2s --json
`

// validateResult is validate's --json output.
type validateResult struct {
	File     string      `json:"file"`
	Valid    bool        `json:"valid"`
	Clients  []string    `json:"clients"`
	Warnings []string    `json:"warnings,omitempty"`
	Errors   []jsonError `json:"errors,omitempty"`
}

func runValidate(args, env []string, stdout, stderr io.Writer) int {
	lf := newFlags("validate", "validate FILE [--env-prefix PREFIX] [--set key=value ...] [--json]", validateAbout, stderr)
	pos, code, stop := parse(lf.fs, args, 1, 1, stdout, stderr)
	if stop {
		return code
	}
	file := pos[0]
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
	return out
}
