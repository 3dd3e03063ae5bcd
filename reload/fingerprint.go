package reload

import (
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// fingerprint is what the watcher remembers of a file to decide whether it changed: the
// path its symlinks resolve to and the hash of its content, or why it could not be read.
// Two fingerprints are equal exactly when a reader would see the same thing, so a touch,
// a chmod or a rewrite with identical bytes compare equal, while a Kubernetes `..data`
// swap (new target) or a deletion (problem "missing") do not. Comparable with ==.
type fingerprint struct {
	target  string // filepath.EvalSymlinks of the path; "" if that failed
	sum     [sha256.Size]byte
	problem string // "" if the content was read; "missing", or the read error
}

// fingerprintOf reads the file at path. It never fails: an unreadable file has a
// fingerprint that says so, which differs from any readable one.
func fingerprintOf(path string) fingerprint {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return problemFingerprint(err)
	}
	f, err := os.Open(target)
	if err != nil {
		return problemFingerprint(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return problemFingerprint(err)
	}
	fp := fingerprint{target: target}
	h.Sum(fp.sum[:0])
	return fp
}

func problemFingerprint(err error) fingerprint {
	if errors.Is(err, fs.ErrNotExist) {
		return fingerprint{problem: "missing"}
	}
	return fingerprint{problem: err.Error()}
}
