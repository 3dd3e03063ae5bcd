package reload_test

import (
	"os"
	"path/filepath"
	"testing"
)

// configMap lays out dir the way the kubelet mounts a ConfigMap:
//
//	dir/..2026_11_29_10_00_00.000000001/clients.yaml
//	dir/..data -> ..2026_11_29_10_00_00.000000001
//	dir/clients.yaml -> ..data/clients.yaml
type configMap struct {
	t   *testing.T
	dir string
	gen int
	ts  string // current timestamped directory
}

func newConfigMap(t *testing.T, dir, content string) *configMap {
	cm := &configMap{t: t, dir: dir}
	cm.ts = cm.writeGeneration(content)
	if err := os.Symlink(cm.ts, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "clients.yaml"), filepath.Join(dir, "clients.yaml")); err != nil {
		t.Fatal(err)
	}
	return cm
}

func (cm *configMap) writeGeneration(content string) string {
	cm.gen++
	ts := "..2026_11_29_10_00_00." + string(rune('0'+cm.gen)) + "23456789"
	if err := os.Mkdir(filepath.Join(cm.dir, ts), 0o755); err != nil {
		cm.t.Fatal(err)
	}
	write(cm.t, filepath.Join(cm.dir, ts, "clients.yaml"), content)
	return ts
}

// update does what the kubelet's atomic writer does: new timestamped directory,
// `..data_tmp` pointing at it, renamed over `..data`, old directory removed.
func (cm *configMap) update(content string) {
	t := cm.t
	old := cm.ts
	cm.ts = cm.writeGeneration(content)
	tmp := filepath.Join(cm.dir, "..data_tmp")
	if err := os.Symlink(cm.ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(cm.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(cm.dir, old)); err != nil {
		t.Fatal(err)
	}
}

func TestConfigMapUpdateMakesExactlyOneReloadDue(t *testing.T) {
	dir := t.TempDir()
	cm := newConfigMap(t, dir, "retry: {max_retries: 1}\n")
	path := filepath.Join(dir, "clients.yaml")
	sentinel := filepath.Join(t.TempDir(), "sentinel")
	write(t, sentinel, "0")
	_, r := startWatch(t, []string{path, sentinel}, watchOpts{})

	for i, want := range []string{"retry: {max_retries: 2}\n", "retry: {max_retries: 3}\n"} {
		cm.update(want)
		if _, n := r.waitFor(t, 0, want); n != 1 {
			t.Fatalf("update %d: the new content came with callback %d, want the first", i, n)
		}
		// Every event of the update was queued before the sentinel's, so a second
		// callback for the update would come before the sentinel's.
		mark := string(rune('1' + i))
		write(t, sentinel, mark)
		if _, n := r.waitFor(t, 1, mark); n != 1 {
			t.Fatalf("update %d: got %d extra callbacks, want 0", i, n-1)
		}
	}
}

func TestConfigMapUnrelatedKeyChangeWithSameContent(t *testing.T) {
	// A ConfigMap update that changes only another key still swaps `..data`: the
	// symlink target of clients.yaml changes, which counts as a change.
	dir := t.TempDir()
	cm := newConfigMap(t, dir, "timeout: 5s\n")
	path := filepath.Join(dir, "clients.yaml")
	_, r := startWatch(t, []string{path}, watchOpts{})

	cm.update("timeout: 5s\n")
	if c := r.next(t); c.contents[0] != "timeout: 5s\n" {
		t.Fatalf("callback read %q", c.contents[0])
	}
}

func TestSymlinkTargetInAnotherDirectoryIsFollowed(t *testing.T) {
	// /etc/app/tls.crt -> /run/secrets/tls.crt: an in-place write to the target is seen
	// although only the link's directory holds a watched name.
	linkDir, targetDir := t.TempDir(), t.TempDir()
	target := filepath.Join(targetDir, "tls.crt")
	link := filepath.Join(linkDir, "tls.crt")
	write(t, target, "cert1")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	_, r := startWatch(t, []string{link}, watchOpts{})

	write(t, target, "cert2")
	r.waitFor(t, 0, "cert2")

	// Repointing the link makes the new target's directory the one followed.
	otherDir := t.TempDir()
	other := filepath.Join(otherDir, "tls.crt")
	write(t, other, "cert3")
	tmp := link + ".tmp"
	if err := os.Symlink(other, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, 0, "cert3")
	write(t, other, "cert4")
	r.waitFor(t, 0, "cert4")
}
