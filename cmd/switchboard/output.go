package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/switchboard-http/switchboard/config"
)

// layerFlags are the flags validate, explain and diff share.
type layerFlags struct {
	fs        *pflag.FlagSet
	envPrefix string
	env       []string // --env NAME=VALUE, on top of the real environment
	section   string   // --section: the key path of the client config in the file
	json      bool
}

// defaultEnvPrefix is the env prefix --env implies when --env-prefix is not given.
const defaultEnvPrefix = "SWITCHBOARD_"

// newFlags returns the flag set of a command that loads files: --env-prefix,
// --set (config.RegisterFlags, read exactly as the service reads it) and
// --json. synopsis and about make its --help.
func newFlags(name, synopsis, about string, stderr io.Writer) *layerFlags {
	lf := &layerFlags{fs: pflag.NewFlagSet(name, pflag.ContinueOnError)}
	lf.fs.SetOutput(stderr)
	lf.fs.SortFlags = false
	lf.fs.StringVar(&lf.envPrefix, "env-prefix", "", `add the env layer: read the variables starting with this prefix, e.g. SWITCHBOARD_ (as the service's Options.EnvPrefix)`)
	lf.fs.StringArrayVar(&lf.env, "env", nil, `add a variable to the env layer as if the service's environment had it, as NAME=VALUE (repeatable; implies --env-prefix `+defaultEnvPrefix+` unless given), e.g. --env SWITCHBOARD_CLIENTS__BILLING__TIMEOUT=2s`)
	lf.fs.StringVar(&lf.section, "section", "", `read the client config from under this key path of the file, e.g. http_clients (as the service's Options.Section)`)
	config.RegisterFlags(lf.fs)
	lf.fs.BoolVar(&lf.json, "json", false, "print JSON for machines instead of text")
	lf.fs.Usage = usageFunc(lf.fs, synopsis, about)
	return lf
}

// usageFunc returns the --help text printer of a command.
func usageFunc(fs *pflag.FlagSet, synopsis, about string) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage:\n  switchboard %s\n\n%s\nFlags:\n%s", synopsis, about, fs.FlagUsages())
	}
}

// parse parses args into fs and checks the number of arguments. It
// returns the positional arguments and, when the caller must stop, the exit
// code: 0 after --help (printed to stdout), 2 after a usage error.
func parse(fs *pflag.FlagSet, args []string, minArgs, maxArgs int, stdout, stderr io.Writer) ([]string, int, bool) {
	// pflag prints the usage itself on --help; print it here instead, to
	// stdout for --help and to stderr for a usage error.
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return nil, exitOK, true
		}
		fmt.Fprintf(stderr, "switchboard %s: %v\n\n", fs.Name(), err)
		fs.Usage()
		return nil, exitUsage, true
	}
	pos := fs.Args()
	if len(pos) < minArgs || len(pos) > maxArgs {
		want := strconv.Itoa(minArgs)
		if maxArgs > minArgs {
			want += " or " + strconv.Itoa(maxArgs)
		}
		fmt.Fprintf(stderr, "switchboard %s: got %d arguments, want %s\n\n", fs.Name(), len(pos), want)
		fs.Usage()
		return nil, exitUsage, true
	}
	return pos, 0, false
}

// badEnv reports a malformed --env on stderr, with the usage: a usage error
// (exit 2), found before anything is checked. An --env whose name does not
// start with the prefix in force is one too, and so is one whose name is
// not switchboard's shape (config.EnvIsOurs): the env layer would ignore
// it, or stop at its misspelling, and a CI gate would pass a value it never
// checked. A typed --env is never a Kubernetes link. The hint is the
// loader's for file ("" for none), where it has one.
func (lf *layerFlags) badEnv(stderr io.Writer, file string) bool {
	prefix := lf.prefix()
	for _, kv := range lf.env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			// The text is not shown: it may hold a secret.
			fmt.Fprintf(stderr, "switchboard %s: --env: want NAME=VALUE, got no \"=\" or no name\n\n", lf.fs.Name())
			lf.fs.Usage()
			return true
		}
		if len(name) < len(prefix) || !strings.EqualFold(name[:len(prefix)], prefix) {
			how := "give --env-prefix to name another"
			if lf.envPrefix != "" {
				how = "as --env-prefix says"
			}
			fmt.Fprintf(stderr, "switchboard %s: --env %s: does not start with the env prefix %s (%s); it would be ignored\n\n", lf.fs.Name(), name, prefix, how)
			lf.fs.Usage()
			return true
		}
		if !config.EnvIsOurs(prefix, name) {
			hint := ""
			if h := lf.envHint(file, prefix, name); h != "" {
				hint = "; did you mean " + h + "?"
			}
			fmt.Fprintf(stderr, "switchboard %s: --env %s: not switchboard's: under the env prefix %s a name starts with %sDEFAULTS__ or %sCLIENTS__ (any case); it would not be read%s\n\n",
				lf.fs.Name(), name, prefix, prefix, prefix, hint)
			lf.fs.Usage()
			return true
		}
	}
	return false
}

// envHint returns the name the loader suggests for the variable name, as
// it would read file with that variable alone, or "" when it has none.
func (lf *layerFlags) envHint(file, prefix, name string) string {
	if file == "" {
		return ""
	}
	_, err := config.Loader{
		File: file, Section: lf.section, EnvPrefix: prefix,
		Environ: func() []string { return []string{name + "="} },
	}.Load()
	for _, fe := range config.FieldErrors(err) {
		if fe.Input == "env "+name {
			return fe.Hint
		}
	}
	return ""
}

// prefix returns the env prefix in force: --env-prefix, or with --env and
// no --env-prefix, defaultEnvPrefix.
func (lf *layerFlags) prefix() string {
	if lf.envPrefix == "" && len(lf.env) > 0 {
		return defaultEnvPrefix
	}
	return lf.envPrefix
}

// load reads file with the layers the flags ask for, as the service would.
// Variables given with --env come after the real ones, so they win.
func (lf *layerFlags) load(file string, env []string) (config.Config, error) {
	prefix := lf.prefix()
	if len(lf.env) > 0 { // well-formed: badEnv ran first
		env = append(slices.Clip(env), lf.env...)
	}
	return config.Loader{
		File:      file,
		Section:   lf.section,
		EnvPrefix: prefix,
		Flags:     lf.fs,
		Environ:   func() []string { return env },
	}.Load()
}

// jsonError is one error of a load in --json output.
type jsonError struct {
	Path    string `json:"path,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	Input   string `json:"input,omitempty"`
	SetBy   string `json:"set_by,omitempty"`
	Text    string `json:"text"`
}

// jsonErrors takes a load error apart: one entry per field error, or one
// for a file-level error.
func jsonErrors(err error) []jsonError {
	fes := config.FieldErrors(err)
	if len(fes) == 0 {
		return []jsonError{{Message: err.Error(), Text: err.Error()}}
	}
	out := make([]jsonError, len(fes))
	for i, fe := range fes {
		out[i] = jsonError{Path: fe.Path, Line: fe.Line, Message: fe.Msg, Hint: fe.Hint, Input: fe.Input, SetBy: fe.SetBy, Text: fe.Error()}
	}
	return out
}

// reportLoadError writes a load error as validate does, as JSON with
// --json and for people otherwise, and returns the exit code for it.
func (lf *layerFlags) reportLoadError(stdout io.Writer, file string, err error) int {
	if lf.json {
		writeJSON(stdout, validateResult{File: file, Clients: []string{}, Errors: jsonErrors(err)})
	} else {
		printLoadError(stdout, file, err)
	}
	return exitInvalid
}

// printLoadError writes a load error for people: a header naming file and
// the number of errors, then one line per error.
func printLoadError(w io.Writer, file string, err error) {
	fes := config.FieldErrors(err)
	if len(fes) == 0 {
		fmt.Fprintf(w, "%s: invalid: %v\n", file, err)
		return
	}
	n := "1 error"
	if len(fes) > 1 {
		n = strconv.Itoa(len(fes)) + " errors"
	}
	fmt.Fprintf(w, "%s: invalid: %s\n", file, n)
	for _, fe := range fes {
		fmt.Fprintf(w, "  %s\n", fe.Error())
	}
}

// writeJSON writes v indented.
func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // plain structs: cannot fail
}

// jsonOrigin is a config.Origin in --json output.
type jsonOrigin struct {
	Layer string `json:"layer"`
	Name  string `json:"name,omitempty"`
	Line  int    `json:"line,omitempty"`
	Path  string `json:"path,omitempty"`
}

func toJSONOrigin(o config.Origin) jsonOrigin {
	return jsonOrigin{Layer: o.Layer.String(), Name: o.Name, Line: o.Line, Path: o.Path}
}

// describeOrigin renders where a value came from: "built-in",
// "file clients.yaml:12", "env SWITCHBOARD_…", "flag --set …". A client's
// value inherited from `defaults` says so.
func describeOrigin(o config.Origin, ok bool, inherited bool) string {
	if !ok {
		return "built-in"
	}
	var s string
	switch o.Layer {
	case config.LayerFile:
		s = "file " + o.Name
		if o.Line > 0 {
			s += ":" + strconv.Itoa(o.Line)
		}
	case config.LayerEnv:
		s = "env " + o.Name
	case config.LayerFlag:
		s = "flag " + o.Name
	default:
		return "built-in"
	}
	if inherited && (strings.HasPrefix(o.Path, "defaults.") || strings.Contains(o.Path, ".defaults.")) {
		s += " (" + o.Path + ")"
	}
	return s
}

// table writes rows as aligned columns, two spaces apart, indented.
func table(w io.Writer, indent string, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r[:len(r)-1] {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// sortedNames returns the client names of cfg, sorted.
func sortedNames(cfg config.Config) []string {
	names := make([]string, 0, len(cfg.Clients))
	for n := range cfg.Clients {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
