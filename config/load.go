package config

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// Loader reads a Config from its layers, lowest first: the built-in defaults
// (Default(), as the `defaults` section), the YAML File, the Sources, the environment
// variables that start with EnvPrefix, and the Flags the user set. See the
// package documentation for the rules.
//
// The zero Loader has no layer but the built-in defaults: it loads a Config
// with Default() as Defaults and no clients. A Loader is a plain value and
// Load keeps no state between calls, so one Loader is safe for concurrent
// use provided Flags is not being parsed or changed at the same time and
// every Source's Read is safe for concurrent use.
type Loader struct {
	// File is the YAML file; "" means no file layer.
	File string
	// Sources are layered above File and below the env, in order, each
	// over the one before; nil means none. See Source.
	Sources []Source
	// EnvPrefix selects the env layer's variables, e.g. "SWITCHBOARD_"
	// (matched case-insensitively); "" means no env layer.
	EnvPrefix string
	// Flags is the application's flag set, already parsed; nil means no flag
	// layer. RegisterFlags adds --set to it.
	Flags *pflag.FlagSet
	// Environ returns the environment as "NAME=value" entries; nil means
	// os.Environ. Tests inject their own.
	Environ func() []string
	// Section, when not "", is the key path ("." between levels, such as
	// "http_clients" or "platform.http") under which File and every Source
	// document keep the client config, beside the application's own keys,
	// which are ignored. Errors and Provenance then give full paths
	// ("http_clients.clients.billing.timeout") and the application file's
	// lines. Env and flag names do not change: a --set key may be written
	// with or without the section. A File without the section is an error
	// (a misspelt section would otherwise run every client on built-in
	// defaults without a word); a Source without it contributes nothing
	// (a store may hold only the application's keys). "" means the whole
	// document is the client config.
	Section string
	// DropUndefinedClients, when true, ignores an env variable or flag
	// that names a client no other layer defines, instead of failing the
	// load; each one is listed in Config.Dropped. A registry sets it for
	// its reloads, so that removing a client from the file does not need a
	// redeploy to clear the env; at start-up such a name is an error (a
	// typo is caught there). False means such a name is an error.
	DropUndefinedClients bool
}

// ErrEmptyFile is matched (errors.Is) by the error Load returns when the file
// holds nothing but blanks and comments. A missing file yields an error that
// matches fs.ErrNotExist.
var ErrEmptyFile = errors.New("config file is empty")

// clientNameRE is what a client name must match: a dot would break key paths.
var clientNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// loadState is the work of one Load call. It is not safe for concurrent use.
type loadState struct {
	ctx     context.Context // bounds the Sources' reads
	errs    []*FieldError
	origins map[string]Origin // full key path → where its current value came from
	k       *koanf.Koanf

	section       string   // Loader.Section
	dropUndefined bool     // Loader.DropUndefinedClients
	envIgnored    []string // env variables under the prefix that are not switchboard's
	dropped       []string // inputs naming an undefined client, dropped
}

// Load reads every layer into a fresh koanf instance, merges `defaults` under
// each client, decodes and validates the result. It returns either a Config
// that passes Validate, with Provenance, Files and InputHash set, or the zero
// Config and an error: a file-level error (missing, unreadable, empty or
// malformed YAML, naming the file), or every *FieldError of the load joined
// together (take them apart with FieldErrors).
func (l Loader) Load() (Config, error) {
	return l.LoadContext(context.Background())
}

// LoadContext is Load with a context that bounds the reads of the Sources:
// each ContextSource gets ctx, and once ctx ends no further Source is read
// and the load fails with an error wrapping ctx's.
func (l Loader) LoadContext(ctx context.Context) (Config, error) {
	st := &loadState{ctx: ctx, origins: map[string]Origin{}, k: koanf.New("."),
		section: l.Section, dropUndefined: l.DropUndefinedClients}
	ih := sha256.New()

	builtin := toTree(Default())
	for _, l := range keyTable {
		st.origins["defaults."+l.path] = Origin{Layer: LayerBuiltin, Path: "defaults." + l.path}
	}
	if err := st.merge(map[string]any{"defaults": builtin, "clients": map[string]any{}}); err != nil {
		return Config{}, err
	}

	var fileClients []string
	if l.File != "" {
		b, err := file.Provider(l.File).ReadBytes()
		if err != nil {
			return Config{}, fmt.Errorf("read config file: %w", err)
		}
		writeHashField(ih, "file", string(b))
		tree, clients, err := st.fileLayer(l.File, b)
		if err != nil {
			return Config{}, err
		}
		fileClients = clients
		if err := st.merge(tree); err != nil {
			return Config{}, err
		}
	}
	for _, src := range l.Sources {
		tree, clients, err := st.sourceLayer(src, ih)
		if err != nil {
			return Config{}, err
		}
		fileClients = mergeNames(fileClients, clients)
		if err := st.merge(tree); err != nil {
			return Config{}, err
		}
	}
	if l.EnvPrefix != "" {
		environ := l.Environ
		if environ == nil {
			environ = os.Environ
		}
		if err := st.merge(st.envLayer(l.EnvPrefix, environ(), fileClients, ih)); err != nil {
			return Config{}, err
		}
	}
	if l.Flags != nil {
		if err := st.merge(st.flagLayer(l.Flags, fileClients, ih)); err != nil {
			return Config{}, err
		}
	}

	cfg, err := st.build()
	if err != nil {
		return Config{}, err
	}
	cfg.Files = referencedFiles(l.File, cfg)
	cfg.EnvIgnored, cfg.Dropped = st.envIgnored, st.dropped
	slices.Sort(cfg.Dropped)
	st.fullPaths(&cfg)
	if len(st.errs) > 0 {
		return Config{}, withNamedFiles(st.err(l.File), cfg.Files)
	}
	// The TLS and secret files are inputs too: a rotated token or
	// certificate must not be skipped as an unchanged reload.
	for _, f := range cfg.Files {
		if f == l.File {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			b = []byte("unreadable: " + err.Error())
		}
		sum := sha256.Sum256(b)
		writeHashField(ih, "ref", f, hex.EncodeToString(sum[:]))
	}
	cfg.InputHash = hex.EncodeToString(ih.Sum(nil))
	return cfg, nil
}

// merge loads one layer's canonical tree into the koanf instance: maps merge
// key by key, everything else replaces.
func (st *loadState) merge(tree map[string]any) error {
	if err := st.k.Load(confmap.Provider(tree, ""), nil); err != nil {
		return fmt.Errorf("merge layer: %w", err)
	}
	return nil
}

// build merges `defaults` under each client of the layered tree, decodes the
// result and validates it, adding every problem to st.errs.
func (st *loadState) build() (Config, error) {
	raw := st.k.Raw()
	defTree, _ := raw["defaults"].(map[string]any)
	clientTrees, _ := raw["clients"].(map[string]any)

	var cfg Config
	var err error
	if cfg.Defaults, err = decodeClient(defTree); err != nil {
		return Config{}, err
	}
	cfg.Clients = make(map[string]ClientConfig, len(clientTrees))
	for _, name := range slices.Sorted(maps.Keys(clientTrees)) {
		ct, _ := clientTrees[name].(map[string]any)
		routeTrees, _ := ct["routes"].(map[string]any)
		if routeTrees != nil {
			ct = maps.Clone(ct)
			delete(ct, "routes")
		}
		eff := mergeUnder(defTree, ct)
		c, err := decodeClient(eff)
		if err != nil {
			return Config{}, err
		}
		// Each route merges over the client's effective keys, as the
		// client merges over defaults.
		for _, pattern := range slices.Sorted(maps.Keys(routeTrees)) {
			rt, _ := routeTrees[pattern].(map[string]any)
			rc, err := decodeClient(mergeUnder(eff, rt))
			if err != nil {
				return Config{}, err
			}
			if c.Routes == nil {
				c.Routes = make(map[string]RouteConfig, len(routeTrees))
			}
			c.Routes[pattern] = routeOf(rc)
		}
		cfg.Clients[name] = c
	}
	cfg.Provenance = st.provenance(cfg)
	st.validate(cfg)
	return cfg, nil
}

// validate runs Config.Validate's checks and says for each problem where the
// offending value came from. A client's error about a value it inherited from
// `defaults` is dropped when `defaults` has the same error.
func (st *loadState) validate(cfg Config) {
	defErrs := map[string]bool{}
	for _, fe := range validateClient("defaults", cfg.Defaults, true) {
		st.annotate(fe, fe.Path)
		defErrs[fe.Path+"\x00"+fe.Msg] = true
		st.errs = append(st.errs, fe)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Clients)) {
		prefix := "clients." + name
		for _, fe := range validateClient(prefix, cfg.Clients[name], true) {
			rel := fe.Path[len(prefix)+1:]
			o := st.annotate(fe, fe.Path)
			if o.Path == "defaults."+rel && defErrs[o.Path+"\x00"+fe.Msg] {
				continue
			}
			st.errs = append(st.errs, fe)
		}
	}
	for _, fe := range validateGroups(cfg) {
		st.annotate(fe, fe.Path)
		st.errs = append(st.errs, fe)
	}
}

// annotate sets fe's Line or SetBy from the origin of the value at path
// (for a client key not set in the client, the inherited `defaults` key).
// When no layer set that value, the first of the other keys the error is
// about that a layer did set places it: "auth.host must be set when a
// credential is set" carries the line of the credential.
func (st *loadState) annotate(fe *FieldError, path string) Origin {
	o, ok := st.origin(path)
	at := o
	for _, p := range fe.about {
		if at.Layer != LayerBuiltin {
			break
		}
		at, _ = st.origin(p)
	}
	st.place(fe, at)
	if !ok {
		return Origin{}
	}
	return o
}

// origin returns where the value at the full key path came from: for a
// client key not set in the client, the inherited `defaults` key's origin.
func (st *loadState) origin(path string) (Origin, bool) {
	o, ok := st.origins[path]
	if !ok {
		if rel, ok2 := relOfClientPath(path); ok2 {
			o, ok = st.origins["defaults."+rel]
		}
	}
	return o, ok
}

// place sets fe's Line or SetBy from o.
func (st *loadState) place(fe *FieldError, o Origin) {
	switch o.Layer {
	case LayerFile:
		fe.Line = o.Line
	case LayerSource:
		fe.SetBy = "source " + o.Name
	case LayerEnv:
		fe.SetBy = "env " + o.Name
	case LayerFlag:
		fe.SetBy = o.Name
	}
}

// relOfClientPath returns "retry.max_retries" for
// "clients.billing.retry.max_retries".
func relOfClientPath(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "clients.")
	if !ok {
		return "", false
	}
	_, rel, ok := strings.Cut(rest, ".")
	return rel, ok
}

// err returns every collected FieldError, sorted (see sortFieldErrors),
// joined and wrapped with the file name when any of them is about the file.
func (st *loadState) err(file string) error {
	sortFieldErrors(st.errs)
	joined := joinFieldErrors(st.errs)
	what := "config"
	if file != "" && slices.ContainsFunc(st.errs, aboutFile) {
		what = "config " + file
	}
	if len(st.errs) == 1 {
		return fmt.Errorf("%s: %w", what, joined)
	}
	return fmt.Errorf("%s: %s errors:\n%w", what, strconv.Itoa(len(st.errs)), joined)
}

// aboutFile reports whether fe is about a value of the file (or of the
// built-in defaults), not one an env variable, flag or Source set.
func aboutFile(fe *FieldError) bool { return fe.Input == "" && fe.SetBy == "" }

// sortFieldErrors sorts errs as a reader of the file goes: the errors with
// a file line by line, then the others (env variables, flags, Sources) by
// key path, then by what names them; the sort is stable.
func sortFieldErrors(errs []*FieldError) {
	slices.SortStableFunc(errs, func(a, b *FieldError) int {
		if (a.Line > 0) != (b.Line > 0) {
			if a.Line > 0 {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Input, b.Input), cmp.Compare(a.SetBy, b.SetBy))
	})
}

// mergeUnder returns over merged over base: maps merge key by key, any other
// value in over replaces base's. Neither input is changed.
func mergeUnder(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	maps.Copy(out, base)
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				out[k] = mergeUnder(bm, om)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// decodeClient decodes a canonical, complete client tree. The tree was type
// checked key by key already, so an error here is a bug, not bad input.
func decodeClient(tree map[string]any) (ClientConfig, error) {
	var c ClientConfig
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		TagName:     "koanf",
		Result:      &c,
		ErrorUnused: true,
	})
	if err != nil {
		return ClientConfig{}, fmt.Errorf("decode config: %w", err)
	}
	if err := dec.Decode(tree); err != nil {
		return ClientConfig{}, fmt.Errorf("decode config: %w", err)
	}
	if c.Headers == nil {
		c.Headers = map[string]string{}
	}
	return c, nil
}

// setPath stores v at segs in tree, creating sections on the way.
func setPath(tree map[string]any, segs []string, v any) {
	m := tree
	for _, s := range segs[:len(segs)-1] {
		next, ok := m[s].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[s] = next
		}
		m = next
	}
	m[segs[len(segs)-1]] = v
}

// fullPaths makes every key path of the load's errors and of cfg's
// Provenance a full path of the document when the config lives in a
// Section: "http_clients.clients.billing.timeout", as the file spells it.
func (st *loadState) fullPaths(cfg *Config) {
	if st.section == "" {
		return
	}
	full := func(p string) string {
		if p == "(none)" || p == SetFlag { // names no key of the document
			return p
		}
		return st.section + "." + p
	}
	for _, fe := range st.errs {
		fe.Path = full(fe.Path)
		for i := range fe.about {
			fe.about[i] = full(fe.about[i])
		}
	}
	if cfg.Provenance == nil {
		return
	}
	fix := func(m map[string]Origin) {
		for k, o := range m {
			o.Path = full(o.Path)
			m[k] = o
		}
	}
	fix(cfg.Provenance.Defaults)
	for _, m := range cfg.Provenance.Clients {
		fix(m)
	}
}
