package config

// Config is a whole loaded configuration: the `defaults` section and every
// named client, each already merged over `defaults` and the built-in
// defaults. A Config built in code is taken as is; start each ClientConfig
// from Default(). A Config is a value: Load returns a fresh one each time and
// nothing in switchboard changes one it was given. The zero Config has no
// clients and zero Defaults (which fail Validate). Safe for concurrent reads.
type Config struct {
	// Defaults is the effective `defaults` section; unknown client names
	// handed to Registry.Get follow it.
	Defaults ClientConfig `koanf:"defaults" json:"defaults"`
	// Clients maps each client name to its effective configuration.
	Clients map[string]ClientConfig `koanf:"clients" json:"clients"`

	// Provenance says, for the defaults and each client, which layer set each
	// effective key. It is nil for a Config built in code.
	Provenance *Provenance `koanf:"-" json:"-"`
	// Files lists the files the config was read from, for watching. Secret
	// and TLS files named in the config are included.
	Files []string `koanf:"-" json:"-"`
	// InputHash is a digest of every input of a load (file bytes, the env
	// variables and flags read); equal hashes mean an identical load. Empty
	// for a Config built in code.
	InputHash string `koanf:"-" json:"-"`
	// EnvIgnored lists, sorted, the env variables under Loader.EnvPrefix
	// that are not switchboard's: only "<prefix>DEFAULTS__…" and
	// "<prefix>CLIENTS__…" are (any case), so the service links Kubernetes
	// injects (<PREFIX>PORT, <PREFIX>SERVICE_HOST) are left alone. Nil when
	// none.
	EnvIgnored []string `koanf:"-" json:"-"`
	// Dropped lists, sorted, the env variables ("env NAME") and flags
	// ("--set key") that named a client no layer defines and were ignored
	// under Loader.DropUndefinedClients. Nil when none.
	Dropped []string `koanf:"-" json:"-"`
}

// Layer names where an effective value came from. The zero value is
// LayerBuiltin.
type Layer int

// The layers, lowest first.
const (
	LayerBuiltin Layer = iota // the built-in defaults
	LayerFile                 // the YAML file
	LayerSource               // a Source of Loader.Sources (Consul, etcd, …)
	LayerEnv                  // an environment variable
	LayerFlag                 // a command-line flag
)

// String returns "built-in", "file", "source", "env" or "flag".
func (l Layer) String() string {
	switch l {
	case LayerFile:
		return "file"
	case LayerSource:
		return "source"
	case LayerEnv:
		return "env"
	case LayerFlag:
		return "flag"
	default:
		return "built-in"
	}
}

// Origin is where one effective key got its value. The zero value is the
// built-in layer with no path. A plain comparable value.
type Origin struct {
	Layer Layer
	// Name is the file path, the Source's Name, the env variable name, or
	// the flag as given (for example "--set clients.billing.timeout" or
	// "--clients.billing.timeout"). Empty for LayerBuiltin.
	Name string
	// Line is the 1-based line in the file, when Layer is LayerFile; 0 if unknown.
	Line int
	// Path is the key path that was set in that layer, e.g.
	// "defaults.retry.max_retries" for a client key inherited from defaults.
	Path string
}

// Provenance maps each effective key of the defaults and of every client to
// its Origin. Keys are dotted paths relative to the client section, such as
// "retry.max_retries" or "headers.User-Agent"; each header is its own key,
// lists are single keys. A client key the client's own section did not set
// has the Origin of the `defaults` key it inherited (Path "defaults.…").
// A nil *Provenance knows nothing. Load never changes a Provenance after
// returning it, so it is safe for concurrent reads.
type Provenance struct {
	Defaults map[string]Origin
	Clients  map[string]map[string]Origin
}

// Of returns where key of client got its value; ok is false when the
// provenance does not know the client or key. Safe for concurrent use.
func (p *Provenance) Of(client, key string) (o Origin, ok bool) {
	if p == nil {
		return Origin{}, false
	}
	o, ok = p.Clients[client][key]
	return o, ok
}

// Client returns the effective configuration of the named client and true,
// or the Defaults and false when c defines no such client (the settings an
// undefined client follows). Safe for concurrent use.
func (c Config) Client(name string) (ClientConfig, bool) {
	if cc, ok := c.Clients[name]; ok {
		return cc, true
	}
	return c.Defaults, false
}
