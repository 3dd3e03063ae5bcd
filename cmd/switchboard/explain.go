package main

import (
	"fmt"
	"io"

	"github.com/switchboard-http/switchboard/config"
)

const explainAbout = `Show the effective configuration of each client (or of CLIENT) after every layer:
built-in defaults, FILE, env vars (--env-prefix) and flags (--set), with defaults merged
under each client. Each key comes with its value and where that value came from:
built-in, file:line, env VAR or flag. A client key inherited from the defaults section
names the defaults key it came from. Secrets (auth.bearer_token, auth.basic.password,
sensitive header values, a proxy URL's password and tokens) read REDACTED.

With --changed, only the keys whose value differs from the built-in default are shown,
with where that value came from: what the file, env and flags changed.

A CLIENT the file does not define is shown as code would get it from Registry.Get:
following defaults.

Examples:
  switchboard explain clients.yaml
  switchboard explain clients.yaml billing --env-prefix SWITCHBOARD_
  switchboard explain clients.yaml billing --json
  switchboard explain clients.yaml billing --changed
  switchboard explain config.yaml --section http_clients
`

// explainClient is one client in explain's --json output.
type explainClient struct {
	Name     string           `json:"name"`
	Defined  bool             `json:"defined"`
	Hash     string           `json:"config_hash"`
	Settings []explainSetting `json:"settings"`
}

type explainSetting struct {
	Key      string     `json:"key"`
	Value    any        `json:"value"`
	Redacted bool       `json:"redacted,omitempty"`
	Origin   jsonOrigin `json:"origin"`

	text, from string // for people: the value as in YAML, the origin in words
}

func runExplain(args, env []string, stdout, stderr io.Writer) int {
	lf := newFlags("explain", "explain FILE [CLIENT] [--changed] [--section PATH] [--env-prefix PREFIX] [--set key=value ...] [--json]", explainAbout, stderr)
	changed := lf.fs.Bool("changed", false, "show only the keys whose value differs from the built-in default")
	pos, code, stop := parse(lf.fs, args, 1, 2, stdout, stderr)
	if stop {
		return code
	}
	if lf.badEnv(stderr, pos[0]) {
		return exitUsage
	}
	file := pos[0]
	cfg, err := lf.load(file, env)
	if err != nil {
		return lf.reportLoadError(stdout, file, err)
	}
	names := sortedNames(cfg)
	if len(pos) == 2 {
		names = pos[1:]
	}
	out := make([]explainClient, 0, len(names))
	for _, name := range names {
		ec := explain(cfg, name)
		if *changed {
			c, _ := cfg.Client(name)
			ec.Settings = changedOnly(c, ec.Settings)
		}
		out = append(out, ec)
	}
	if lf.json {
		writeJSON(stdout, struct {
			File    string          `json:"file"`
			Clients []explainClient `json:"clients"`
		}{file, out})
		return exitOK
	}
	for i, c := range out {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if c.Defined && lf.section != "" {
			fmt.Fprintf(stdout, "client %s (%s.clients.%s)\n", c.Name, lf.section, c.Name)
		} else if c.Defined {
			fmt.Fprintf(stdout, "client %s\n", c.Name)
		} else {
			fmt.Fprintf(stdout, "client %s (not defined in %s: Registry.Get(%q) follows defaults)\n", c.Name, file, c.Name)
		}
		if *changed && len(c.Settings) == 0 {
			fmt.Fprintln(stdout, "  (every key at its built-in default)")
		}
		rows := make([][]string, 0, len(c.Settings))
		for _, s := range c.Settings {
			rows = append(rows, []string{s.Key, s.text, s.from})
		}
		table(stdout, "  ", rows)
	}
	return exitOK
}

// explain collects one client's settings with their origins; a name cfg
// does not define gets the defaults, as Registry.Get would.
func explain(cfg config.Config, name string) explainClient {
	c, defined := cfg.Client(name)
	ec := explainClient{Name: name, Defined: defined, Hash: c.Hash()}
	for _, s := range c.Settings() {
		var o config.Origin
		var ok bool
		if defined {
			o, ok = cfg.Provenance.Of(name, s.Key)
		} else {
			o, ok = cfg.Provenance.Default(s.Key)
		}
		ec.Settings = append(ec.Settings, explainSetting{
			Key: s.Key, Value: s.Value, Redacted: s.Redacted, Origin: toJSONOrigin(o),
			text: s.Text, from: describeOrigin(o, ok, defined),
		})
	}
	return ec
}

// changedOnly returns the settings of c whose value differs from the
// built-in default's: the keys config.ChangedKeys(config.Default(), c)
// names, the one decision Status.NonDefault reads too.
func changedOnly(c config.ClientConfig, settings []explainSetting) []explainSetting {
	changed := map[string]bool{}
	for _, kc := range config.ChangedKeys(config.Default(), c) {
		changed[kc.Key] = true
	}
	var out []explainSetting
	for _, s := range settings {
		if changed[s.Key] {
			out = append(out, s)
		}
	}
	return out
}
