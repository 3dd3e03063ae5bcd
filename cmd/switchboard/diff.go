package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/factory"
)

const diffAbout = `Show what a reload from OLD to NEW would do in a running service: which clients are
added, removed or changed; for each changed client which keys change (old -> new,
secrets redacted), which components of its pipeline are kept, retuned in place with
their state (breaker state, budget, limiter tokens, bulkhead slots), started fresh or
switched off; and whether its base transport, with its warm connections, is replaced.
The rules are Registry.Apply's (factory.Plan). Both files get the same env and flag
layers. Exit code 0 whatever the differences; 1 when either file is invalid (a reload
to an invalid NEW is rejected and changes nothing).

Examples:
  switchboard diff clients.yaml clients.new.yaml
  switchboard diff old.yaml new.yaml --json
`

// diffResult is diff's --json output.
type diffResult struct {
	Old             string             `json:"old"`
	New             string             `json:"new"`
	DefaultsChanged []config.KeyChange `json:"defaults_changed"`
	Clients         []diffClient       `json:"clients"`
}

type diffClient struct {
	Name       string                    `json:"name"`
	Action     factory.Action            `json:"action"`
	Keys       []config.KeyChange        `json:"keys,omitempty"`
	Components map[string]factory.Change `json:"components,omitempty"`
}

func runDiff(args, env []string, stdout, stderr io.Writer) int {
	lf := newFlags("diff", "diff OLD NEW [--section PATH] [--env-prefix PREFIX] [--set key=value ...] [--json]", diffAbout, stderr)
	pos, code, stop := parse(lf.fs, args, 2, 2, stdout, stderr)
	if stop {
		return code
	}
	if lf.badEnv(stderr, pos[1]) {
		return exitUsage
	}
	oldFile, newFile := pos[0], pos[1]
	oldCfg, oldErr := lf.load(oldFile, env)
	newCfg, newErr := lf.load(newFile, env)
	if oldErr != nil || newErr != nil {
		var res []validateResult
		for _, f := range []struct {
			name string
			err  error
		}{{oldFile, oldErr}, {newFile, newErr}} {
			if f.err == nil {
				continue
			}
			if lf.json {
				res = append(res, validateResult{File: f.name, Clients: []string{}, Errors: jsonErrors(f.err)})
			} else {
				printLoadError(stdout, f.name, f.err)
			}
		}
		if lf.json {
			writeJSON(stdout, res)
		}
		return exitInvalid
	}

	plans := factory.Plan(oldCfg, newCfg)
	defaults := config.ChangedKeys(oldCfg.Defaults, newCfg.Defaults)
	if lf.json {
		res := diffResult{Old: oldFile, New: newFile, DefaultsChanged: defaults, Clients: []diffClient{}}
		if res.DefaultsChanged == nil {
			res.DefaultsChanged = []config.KeyChange{}
		}
		for _, p := range plans {
			dc := diffClient{Name: p.Name, Action: p.Action, Keys: p.Keys}
			if len(p.Components) > 0 {
				dc.Components = map[string]factory.Change{}
				for _, c := range p.Components {
					dc.Components[c.Component] = c.Change
				}
			}
			res.Clients = append(res.Clients, dc)
		}
		writeJSON(stdout, res)
		return exitOK
	}
	printDiff(stdout, oldFile, newFile, plans, defaults)
	return exitOK
}

// printDiff writes the plan for people.
func printDiff(w io.Writer, oldFile, newFile string, plans []factory.ClientPlan, defaults []config.KeyChange) {
	fmt.Fprintf(w, "reload %s -> %s\n", oldFile, newFile)
	byAction := map[factory.Action][]string{}
	for _, p := range plans {
		byAction[p.Action] = append(byAction[p.Action], p.Name)
	}
	rows := [][]string{}
	for _, a := range []factory.Action{factory.ActionAdded, factory.ActionRemoved, factory.ActionChanged, factory.ActionUnchanged} {
		names := byAction[a]
		if len(names) == 0 {
			names = []string{"-"}
		}
		rows = append(rows, []string{string(a) + ":", strings.Join(names, ", ")})
	}
	table(w, "  ", rows)
	if len(byAction[factory.ActionAdded])+len(byAction[factory.ActionRemoved])+len(byAction[factory.ActionChanged]) == 0 && len(defaults) == 0 {
		fmt.Fprintln(w, "\nno changes: a reload would keep every pipeline as it is")
		return
	}
	if len(defaults) > 0 {
		fmt.Fprintln(w, "\ndefaults: changed (clients the file does not define, handed out by Get, follow them)")
		printKeys(w, defaults)
	}
	for _, p := range plans {
		switch p.Action {
		case factory.ActionUnchanged:
			continue
		case factory.ActionAdded:
			fmt.Fprintf(w, "\n%s: added: a new pipeline and transport\n", p.Name)
			printComponents(w, p)
			continue
		case factory.ActionRemoved:
			fmt.Fprintf(w, "\n%s: removed: its client keeps working for code that holds it, following defaults\n", p.Name)
		default:
			fmt.Fprintf(w, "\n%s: changed\n", p.Name)
		}
		printKeys(w, p.Keys)
		printComponents(w, p)
	}
}

func printKeys(w io.Writer, keys []config.KeyChange) {
	rows := make([][]string, 0, len(keys))
	for _, k := range keys {
		old, new := k.Old, k.New
		if old == "" {
			old = "(none)"
		}
		if new == "" {
			new = "(none)"
		}
		note := ""
		if k.Redacted {
			note = "  (secret changed)"
		}
		rows = append(rows, []string{k.Key + ":", old + " -> " + new + note})
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "  keys: none (only the defaults it follows)")
		return
	}
	fmt.Fprintln(w, "  keys:")
	table(w, "    ", rows)
}

// changeText says in words what happens to a component.
func changeText(component string, ch factory.Change) string {
	stateful := factory.Stateful(component)
	switch {
	case component == factory.ComponentTransport && ch == factory.Unchanged:
		return "kept, with its warm connections"
	case component == factory.ComponentTransport && ch == factory.Replaced:
		return "replaced: new connections; the old transport closes its own once its requests end"
	case component == factory.ComponentTransport && ch == factory.Retuned:
		return "kept, with its warm connections; retuned"
	case ch == factory.Replaced:
		return "replaced, state fresh"
	case ch == factory.Retuned && stateful:
		return "retuned in place, state kept"
	case ch == factory.Retuned:
		return "retuned"
	case ch == factory.Unchanged && stateful:
		return "kept, state kept"
	case ch == factory.Unchanged:
		return "kept"
	case ch == factory.Started:
		return "started fresh"
	case ch == factory.Stopped:
		return "switched off, state dropped"
	case ch == factory.Off:
		return "off"
	}
	return string(ch)
}

func printComponents(w io.Writer, p factory.ClientPlan) {
	fmt.Fprintln(w, "  pipeline:")
	rows := make([][]string, 0, len(p.Components))
	for _, c := range p.Components {
		row := []string{c.Component, changeText(c.Component, c.Change)}
		if c.Reason != "" && c.Change != factory.Unchanged && c.Change != factory.Off && p.Action != factory.ActionAdded {
			row[1] += " (" + c.Reason + ")"
		}
		rows = append(rows, row)
	}
	table(w, "    ", rows)
}
