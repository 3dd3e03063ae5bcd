package factory

import (
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/switchboard-http/switchboard/config"
	"github.com/switchboard-http/switchboard/middleware"
)

// material is what a client's config names outside itself, resolved: the
// credential with its files read, and the TLS configuration with the CA
// bundle and key pair read and parsed. It is resolved on every apply, so a
// rotated token or certificate reaches the client; its digests tell apply
// whether anything changed.
type material struct {
	cred middleware.Credential
	// tls is the TLS configuration, nil when the tls block is ignored
	// (Options.Base). It is a template, never handed to a transport: one
	// without files is shared by every client with the same tls block in a
	// load, and newTransport gives each transport a clone.
	tls *tls.Config
	// credDigest covers the credential (the config's values and the
	// files' contents); tlsDigest covers the TLS files. Both are SHA-256
	// sums, never the secrets themselves; tlsDigest is zero when the tls
	// block names no file. With the config they are a client's input (see
	// clientInput).
	credDigest [sha256.Size]byte
	tlsDigest  [sha256.Size]byte
}

// fileCache holds the files read during one apply, so that a CA bundle
// shared by many clients is read once and all of them see the same bytes.
// It also holds the TLS templates of tls blocks that name no file, one per
// distinct block.
type fileCache map[string]fileRead

// tlsKey is the fileCache key of the TLS template of a tls block without
// files; no file path starts with a NUL byte.
func tlsKey(c config.TLSConfig) string {
	return "\x00tls:" + c.MinVersion + "\x00" + c.ServerName + "\x00" + strconv.FormatBool(c.InsecureSkipVerify)
}

type fileRead struct {
	b   []byte
	err error
	tls *tls.Config // for a tlsKey entry
}

func (fc fileCache) read(path string) ([]byte, error) {
	if r, ok := fc[path]; ok {
		return r.b, r.err
	}
	b, err := os.ReadFile(path)
	fc[path] = fileRead{b: b, err: err}
	return b, err
}

// sectionOf is the key path prefix of a client's section in errors:
// "clients.<name>", or "defaults" for a name the config does not define.
func sectionOf(name string, defined bool) string {
	if defined {
		return "clients." + name
	}
	return "defaults"
}

// resolve reads the secret and TLS files c names and builds its material.
// withTLS is false when the tls block is ignored. Each problem is an error
// naming the full key path (prefix + "." + key) and the file, never its
// content; every problem of c is returned, joined.
func resolve(prefix string, c config.ClientConfig, withTLS bool, fc fileCache) (material, error) {
	var (
		m    material
		errs []error
	)
	fail := func(key string, err error) {
		errs = append(errs, fmt.Errorf("%s.%s: %w", prefix, key, err))
	}
	secret := func(key, value, file string) string {
		if file == "" {
			return value
		}
		b, err := fc.read(file)
		if err != nil {
			fail(key, err)
			return ""
		}
		s, err := config.SecretFromFile(file, b) // what Load checks, too
		if err != nil {
			fail(key, err)
		}
		return s
	}
	a := c.Auth
	m.cred = middleware.Credential{
		Bearer:   secret("auth.bearer_token_file", a.BearerToken.Reveal(), a.BearerTokenFile),
		Username: a.Basic.Username,
		Password: secret("auth.basic.password_file", a.Basic.Password.Reveal(), a.Basic.PasswordFile),
	}

	if withTLS {
		c := c.TLS
		if c.CAFile == "" && c.CertFile == "" && c.KeyFile == "" {
			// No file: the template depends on the block alone.
			key := tlsKey(c)
			if r, ok := fc[key]; ok {
				m.tls = r.tls
			} else {
				t, err := tlsConfig(prefix, c, fc, nil)
				if err != nil {
					errs = append(errs, err) // not kept: each client's error names its own key
				} else {
					fc[key] = fileRead{tls: t}
				}
				m.tls = t
			}
		} else {
			var files []byte
			t, err := tlsConfig(prefix, c, fc, &files)
			if err != nil {
				errs = append(errs, err)
			}
			m.tls, m.tlsDigest = t, sha256.Sum256(files)
		}
	}
	if len(errs) > 0 {
		return material{}, errors.Join(errs...)
	}
	var buf [256]byte
	m.credDigest = sha256.Sum256(appendParts(buf[:0], m.cred.Bearer, m.cred.Username, m.cred.Password))
	clear(buf[:]) // it held the credential
	return m, nil
}

// appendParts appends each part to b with its length, so that no two
// different sequences of parts give the same bytes.
func appendParts(b []byte, parts ...string) []byte {
	for _, p := range parts {
		b = strconv.AppendInt(b, int64(len(p)), 10)
		b = append(append(b, ':'), p...)
	}
	return b
}

// tlsVersions maps the tls.min_version values to crypto/tls constants.
var tlsVersions = map[string]uint16{
	"":    tls.VersionTLS12,
	"1.0": tls.VersionTLS10,
	"1.1": tls.VersionTLS11,
	"1.2": tls.VersionTLS12,
	"1.3": tls.VersionTLS13,
}

// tlsConfig builds the client TLS configuration of the tls block c: minimum
// version, server name, insecure_skip_verify, the CA bundle (which replaces
// the system roots) and the client key pair (mTLS), reading the files
// through fc and appending their contents to *files (nil: c names none).
// Errors name prefix + key.
func tlsConfig(prefix string, c config.TLSConfig, fc fileCache, files *[]byte) (*tls.Config, error) {
	if files == nil {
		files = new([]byte)
	}
	var errs []error
	fail := func(key string, err error) {
		errs = append(errs, fmt.Errorf("%s.tls.%s: %w", prefix, key, err))
	}
	v, ok := tlsVersions[c.MinVersion]
	if !ok {
		fail("min_version", fmt.Errorf("unknown version %q", c.MinVersion))
	}
	out := &tls.Config{
		MinVersion:         v,
		ServerName:         c.ServerName,
		InsecureSkipVerify: c.InsecureSkipVerify, //nolint:gosec // an explicit opt-in, logged at WARN on every load
	}
	if c.CAFile != "" {
		pem, err := fc.read(c.CAFile)
		*files = appendParts(*files, "ca", string(pem))
		if err != nil {
			fail("ca_file", err)
		} else {
			pool, err := config.CAPoolFromPEM(c.CAFile, pem) // what Load checks, too
			if err != nil {
				fail("ca_file", err)
			}
			out.RootCAs = pool
		}
	}
	if c.CertFile != "" || c.KeyFile != "" {
		certPEM, cerr := fc.read(c.CertFile)
		keyPEM, kerr := fc.read(c.KeyFile)
		*files = appendParts(*files, "cert", string(certPEM), "key", string(keyPEM))
		switch {
		case c.CertFile == "":
			fail("cert_file", errors.New("must be set when key_file is set"))
		case c.KeyFile == "":
			fail("key_file", errors.New("must be set when cert_file is set"))
		case cerr != nil:
			fail("cert_file", cerr)
		case kerr != nil:
			fail("key_file", kerr)
		default:
			pair, err := config.KeyPairFromPEM(c.CertFile, c.KeyFile, certPEM, keyPEM)
			if err != nil {
				fail("cert_file", err)
			} else {
				out.Certificates = []tls.Certificate{pair}
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
