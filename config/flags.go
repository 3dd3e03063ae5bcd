package config

import (
	"hash"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/knadh/koanf/providers/posflag"
	"github.com/spf13/pflag"
)

// SetFlag is the name of the repeatable flag RegisterFlags adds.
const SetFlag = "set"

// RegisterFlags adds to fs the repeatable flag `--set key=value`, which
// overrides any key of the file format, for example
// `--set clients.billing.timeout=2s --set defaults.retry.retryable_status=502,503`.
// Values are read by the key's kind; lists are comma-separated. It does
// nothing when fs already has a flag named "set". Like every FlagSet
// method, it is not safe for concurrent use with other uses of fs.
func RegisterFlags(fs *pflag.FlagSet) {
	if fs.Lookup(SetFlag) != nil {
		return
	}
	fs.StringArray(SetFlag, nil, "override a config key, as key=value (repeatable; lists are comma-separated), e.g. clients.billing.timeout=2s")
}

// flagsMu serialises walks over FlagSets: pflag's Visit caches a sorted
// slice inside the FlagSet on first use, so two Loads sharing one FlagSet
// would race without it.
var flagsMu sync.Mutex

// flagLayer turns the flags the user set into a canonical tree: first every
// changed flag whose name is a key path (such as "clients.billing.timeout"),
// then each --set in the order given, so a later --set wins. Flags with
// other names are the application's own and are ignored. The flags read are
// written to ih.
func (st *loadState) flagLayer(fs *pflag.FlagSet, fileClients []string, ih hash.Hash) map[string]any {
	type setting struct{ input, key, text string }
	var pathFlags []setting
	var sets []string
	var setErr *FieldError
	flagsMu.Lock()
	// koanf's posflag provider picks the flags the user changed (with no
	// koanf instance given, unchanged flags are left out); they are then
	// taken in name order.
	changed, _ := posflag.ProviderWithFlag(fs, nul, nil, func(fl *pflag.Flag) (string, any) {
		return fl.Name, fl
	}).Read()
	for _, name := range slices.Sorted(maps.Keys(changed)) {
		fl := changed[name].(*pflag.Flag)
		if fl.Name == SetFlag {
			sv, ok := fl.Value.(pflag.SliceValue)
			if !ok {
				setErr = &FieldError{Path: SetFlag, Input: "--" + SetFlag, Msg: "flag is not a string array; register it with RegisterFlags"}
				continue
			}
			sets = sv.GetSlice()
			continue
		}
		if _, _, fe := resolveKey(fl.Name); fe != nil {
			continue // the application's own flag
		}
		text := fl.Value.String()
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			text = strings.Join(sv.GetSlice(), ",")
		}
		pathFlags = append(pathFlags, setting{"--" + fl.Name, fl.Name, text})
	}
	flagsMu.Unlock()
	if setErr != nil {
		st.errs = append(st.errs, setErr)
	}

	all := pathFlags
	for _, s := range sets {
		key, text, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if st.section != "" {
			// The full path an error shows works as well.
			key = strings.TrimPrefix(key, st.section+".")
		}
		if !ok || key == "" {
			// The text is not shown: it may be a secret with a typo.
			st.errs = append(st.errs, &FieldError{Path: SetFlag, Input: "--" + SetFlag, Msg: `want key=value, got no "=" or no key`})
			continue
		}
		all = append(all, setting{"--set " + key, key, text})
	}

	tree := map[string]any{}
	for _, s := range all {
		writeHashField(ih, "flag", s.input, s.text)
		segs, f, fe := resolveKey(s.key)
		if fe == nil {
			fe = flagClient(segs, fileClients)
			if fe != nil && st.dropUndefined {
				st.dropped = append(st.dropped, s.input)
				continue
			}
		}
		if fe != nil {
			fe.Input = s.input
			st.errs = append(st.errs, fe)
			continue
		}
		path := strings.Join(segs, ".")
		val, msg := fromText(f, s.text)
		if msg != "" {
			st.errs = append(st.errs, &FieldError{Path: path, Input: s.input, Msg: msg})
			continue
		}
		setPath(tree, segs, val)
		st.origins[path] = Origin{Layer: LayerFlag, Name: s.input, Path: path}
	}
	return tree
}

// resolveKey maps a dotted key path, as written in a flag, to its segments
// and field. Names are exact; a header name is everything after "headers."
// and is put in canonical form.
func resolveKey(key string) ([]string, *field, *FieldError) {
	parts := strings.Split(key, ".")
	unknown := func(hint string) *FieldError {
		return &FieldError{Path: key, Msg: "unknown key " + key, Hint: hint}
	}
	var segs, rest []string
	switch parts[0] {
	case "defaults":
		segs, rest = []string{"defaults"}, parts[1:]
	case "clients":
		if len(parts) < 2 {
			return nil, nil, &FieldError{Path: key, Msg: "names no client: want clients.<name>.<key>"}
		}
		if !clientNameRE.MatchString(parts[1]) {
			return nil, nil, &FieldError{Path: key, Msg: "client name " + quoteShort(parts[1]) + " must match " + clientNameRE.String()}
		}
		segs, rest = []string{"clients", parts[1]}, parts[2:]
	default:
		return nil, nil, unknown(suggest(parts[0], []string{"clients", "defaults"}))
	}
	rel, f, hint, res := resolveRel(rest, false)
	switch res {
	case relUnknown:
		return nil, nil, unknown(hint)
	case relSection:
		return nil, nil, &FieldError{Path: key, Msg: key + " is a section, not a key: name one of its keys"}
	}
	return append(segs, rel...), f, nil
}

// flagClient checks that the client a flag's key path segs names, if any,
// is one the file or a Source defines (the names exact, as in the file): a
// flag cannot create a client, any more than an env variable can.
func flagClient(segs, fileClients []string) *FieldError {
	if segs[0] != "clients" || slices.Contains(fileClients, segs[1]) {
		return nil
	}
	fe := noClient(segs[1], suggest(segs[1], fileClients))
	fe.Path = strings.Join(segs, ".")
	return fe
}
