package middleware

// AuthSettings is the `auth` block. The zero value sends no credential.
// A credential is only ever sent to Host; config validation rejects a
// credential without a Host.
type AuthSettings struct {
	// Host is the URL host (a bare host[:port], no scheme) that receives the
	// credential. The host name matches ignoring case, and a default port
	// written or implied is the same ("api.example.com" is
	// "api.example.com:443" for https); no subdomain matches. Other hosts,
	// and redirects that change the scheme of the call's first request to
	// Host, get none (see Auth). "" sends the credential nowhere.
	Host string `koanf:"host" json:"host"`
	// BearerToken is sent as "Authorization: Bearer <token>". It prints as
	// Redacted; read it with Reveal. "" = none.
	BearerToken Secret `koanf:"bearer_token" json:"bearer_token" secret:"true"`
	// BearerTokenFile is read (and trimmed) instead of BearerToken; it is
	// re-read when it changes, for rotating tokens.
	BearerTokenFile string `koanf:"bearer_token_file" json:"bearer_token_file"`
	// Basic holds HTTP basic credentials.
	Basic BasicAuth `koanf:"basic" json:"basic"`
}

// BasicAuth is the `auth.basic` block. The zero value sends no credential.
type BasicAuth struct {
	Username string `koanf:"username" json:"username"`
	// Password prints as Redacted; read it with Reveal. "" = none.
	Password     Secret `koanf:"password" json:"password" secret:"true"`
	PasswordFile string `koanf:"password_file" json:"password_file"`
}

// HasCredential reports whether the settings carry any credential.
func (a AuthSettings) HasCredential() bool {
	return a.BearerToken != "" || a.BearerTokenFile != "" ||
		a.Basic.Username != "" || a.Basic.Password != "" || a.Basic.PasswordFile != ""
}

// LogLevel is the `logging.level` of a client: the slog level of its
// one-record-per-attempt log. The zero value "" means LogDebug.
type LogLevel string

// The logging levels.
const (
	LogDebug LogLevel = "debug"
	LogInfo  LogLevel = "info"
	LogOff   LogLevel = "off"
)

// LoggingSettings is the `logging` block.
type LoggingSettings struct {
	// Level is debug, info or off.
	Level LogLevel `koanf:"level" json:"level" enum:"debug,info,off"`
	// Events is which events become slog records: all, warn or off.
	Events LogEvents `koanf:"events" json:"events" enum:"all,warn,off"`
}

// LogEvents is the `logging.events` of a client: which of its events (see
// Event) are slog records. An Observer, and the otel integration through
// it, gets every event whatever it says: it quiets the log, not the
// metrics. The zero value "" means EventsAll.
type LogEvents string

// The values of logging.events.
const (
	EventsAll  LogEvents = "all"  // every event, at its level (retry.attempt is INFO)
	EventsWarn LogEvents = "warn" // only the events at WARN or ERROR (retry.exhausted, circuit.opened, …)
	EventsOff  LogEvents = "off"  // none
)

// DefaultLoggingSettings returns the built-in logging settings (debug, all).
func DefaultLoggingSettings() LoggingSettings {
	return LoggingSettings{Level: LogDebug, Events: EventsAll}
}
