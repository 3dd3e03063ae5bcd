package factory

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"

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
	tls  *tls.Config // nil when the tls block is ignored (Options.Base)
	// digest covers everything above (the config's own values and the
	// files' contents); tlsDigest covers the TLS files alone. Both are hex
	// SHA-256, never the secrets themselves.
	digest    string
	tlsDigest string
}

// fileCache holds the files read during one apply, so that a CA bundle
// shared by many clients is read once and all of them see the same bytes.
type fileCache map[string]fileRead

type fileRead struct {
	b   []byte
	err error
}

func (fc fileCache) read(path string) ([]byte, error) {
	if r, ok := fc[path]; ok {
		return r.b, r.err
	}
	b, err := os.ReadFile(path)
	fc[path] = fileRead{b, err}
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
		s := strings.TrimSpace(string(b))
		switch {
		case s == "":
			fail(key, fmt.Errorf("file %s is empty", file))
		case strings.ContainsAny(s, "\r\n\x00"):
			fail(key, fmt.Errorf("file %s holds more than one line (or a NUL byte)", file))
		}
		return s
	}
	a := c.Auth
	m.cred = middleware.Credential{
		Bearer:   secret("auth.bearer_token_file", a.BearerToken, a.BearerTokenFile),
		Username: a.Basic.Username,
		Password: secret("auth.basic.password_file", a.Basic.Password, a.Basic.PasswordFile),
	}

	th := sha256.New()
	if withTLS {
		var err error
		m.tls, err = tlsConfig(prefix, c.TLS, fc, th)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return material{}, errors.Join(errs...)
	}
	m.tlsDigest = hex.EncodeToString(th.Sum(nil))
	h := sha256.New()
	writeParts(h, m.cred.Bearer, m.cred.Username, m.cred.Password, m.tlsDigest)
	m.digest = hex.EncodeToString(h.Sum(nil))
	return m, nil
}

// writeParts writes each part with its length, so that no two different
// sequences of parts write the same bytes.
func writeParts(h hash.Hash, parts ...string) {
	n := 0
	for _, p := range parts {
		n += 21 + len(p) // 20 digits at most, ':', the part
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		b = strconv.AppendInt(b, int64(len(p)), 10)
		b = append(append(b, ':'), p...)
	}
	h.Write(b) // one write of "%d:%s" per part, without fmt
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
// through fc and writing their contents to th. Errors name prefix + key.
func tlsConfig(prefix string, c config.TLSConfig, fc fileCache, th hash.Hash) (*tls.Config, error) {
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
		writeParts(th, "ca", string(pem))
		if err != nil {
			fail("ca_file", err)
		} else {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				fail("ca_file", fmt.Errorf("no PEM certificate in %s", c.CAFile))
			}
			out.RootCAs = pool
		}
	}
	if c.CertFile != "" || c.KeyFile != "" {
		certPEM, cerr := fc.read(c.CertFile)
		keyPEM, kerr := fc.read(c.KeyFile)
		writeParts(th, "cert", string(certPEM), "key", string(keyPEM))
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
			// X509KeyPair's errors describe the problem, never the key.
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				fail("cert_file", fmt.Errorf("%s with %s: %w", c.CertFile, c.KeyFile, err))
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
