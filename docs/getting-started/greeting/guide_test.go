package main

// This file is not part of the guide: it keeps ../../getting-started.md
// true to this module, and runs its commands as a newcomer types them.

import (
	"archive/zip"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/operatorkit/operatorkit/operator"
)

// guide is the getting-started guide, which shows this module's files.
const guide = "../../getting-started.md"

// fence matches the opening line of a fenced code block: its language and
// the rest of its info string.
var fence = regexp.MustCompile("^```([a-z]*)(.*)$")

// TestGuideShowsTheFiles checks that every Go and YAML code block of the
// guide names a file of this module (```go file=main.go) and shows it
// exactly, whole, and that the guide shows every file a reader writes: the
// Go files but this one and controller-gen's, and config/samples.
func TestGuideShowsTheFiles(t *testing.T) {
	data, err := os.ReadFile(guide)
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]int{} // file name → line of its block
	lines := strings.SplitAfter(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(strings.TrimSuffix(lines[i], "\n"))
		if m == nil {
			continue
		}
		start, lang, info := i+1, m[1], strings.TrimSpace(m[2])
		var body strings.Builder
		for i++; i < len(lines) && strings.TrimRight(lines[i], "\n") != "```"; i++ {
			body.WriteString(lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: code block not closed", guide, start)
		}
		name, named := strings.CutPrefix(info, "file=")
		if !named {
			if lang == "go" || lang == "yaml" {
				t.Errorf("%s:%d: %s block names no file (```%s file=path): it would not be checked", guide, start, lang, lang)
			}
			continue // commands and their output
		}
		if shown[name] != 0 {
			t.Errorf("%s:%d: %s is shown twice (first on line %d)", guide, start, name, shown[name])
		}
		shown[name] = start
		want, err := os.ReadFile(filepath.FromSlash(name))
		if err != nil {
			t.Errorf("%s:%d: %v", guide, start, err)
			continue
		}
		if got := body.String(); got != string(want) {
			n := firstDiff(got, string(want))
			t.Errorf("%s:%d: the block differs from %s at its line %d:\n  guide: %q\n  file:  %q", guide, start, name, n+1, lineAt(got, n), lineAt(string(want), n))
		}
	}

	var files []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		path = filepath.ToSlash(path)
		base := filepath.Base(path)
		if strings.HasSuffix(path, ".go") && base != "guide_test.go" && !strings.HasPrefix(base, "zz_generated") ||
			strings.HasPrefix(path, "config/samples/") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if shown[f] == 0 {
			t.Errorf("%s does not show %s", guide, f)
		}
	}
	if len(files) == 0 || !slices.Contains(files, "main.go") {
		t.Fatalf("found no files to check: %v", files)
	}
}

// firstDiff returns the index of the first line where a and b differ.
func firstDiff(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i
		}
	}
	return min(len(al), len(bl))
}

// lineAt returns line i of s, or "" past its end.
func lineAt(s string, i int) string {
	if l := strings.Split(s, "\n"); i < len(l) {
		return l[i]
	}
	return ""
}

// TestGuideNamesTheAddressFlags: step 3 names every address the operator
// listens on, each by its flag, as operator.Options.BindFlags binds them:
// a reader who runs the operator (step 5) must know every port it opens,
// and how to move it when it is taken. --health-probe-bind-address (the
// probes, on :8081 of every interface by default) was not named.
func TestGuideNamesTheAddressFlags(t *testing.T) {
	data, err := os.ReadFile(guide)
	if err != nil {
		t.Fatal(err)
	}
	step := string(data)
	start, end := strings.Index(step, "\n## 3."), strings.Index(step, "\n## 4.")
	if start < 0 || end < start {
		t.Fatalf("%s has no step 3", guide)
	}
	step = step[start:end]
	var opts operator.Options
	fs := flag.NewFlagSet("greeting-operator", flag.ContinueOnError)
	opts.BindFlags(fs)
	checked := 0
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.HasSuffix(f.Name, "-bind-address") {
			return
		}
		checked++
		if !strings.Contains(step, "`--"+f.Name+"`") {
			t.Errorf("step 3 of %s does not name `--%s` (default %s: %s)", guide, f.Name, f.DefValue, f.Usage)
		}
	})
	if checked < 2 {
		t.Fatalf("found %d address flags, want the metrics' and the probes'", checked)
	}
}

// TestGuideCommands follows steps 0 to 4 of the guide in an empty
// directory: it writes each file when the guide shows it and runs each
// shell block when the guide does, with this checkout's library and testenv
// as their latest version (v0.1.0, from a module proxy in a directory) and
// with a Kubernetes release newer than the one operatorkit is built with
// (k8s.io/api at a higher patch version), as there usually is. Every
// command must succeed, and the module must end with the Kubernetes
// modules at the versions operatorkit requires, as the guide says.
func TestGuideCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from the guide and runs its test against an API server")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git to list the checkout's files")
	}
	const root = "../../.."
	modCache, origProxy := goEnv(t, "GOMODCACHE"), goEnv(t, "GOPROXY")

	// The proxy: operatorkit and testenv from this checkout, and k8s.io/api
	// at operatorkit's version and at a newer one.
	proxy := t.TempDir()
	zipModule(t, proxy, "github.com/operatorkit/operatorkit", root)
	zipModule(t, proxy, "github.com/operatorkit/operatorkit/testenv", root+"/testenv")
	want := required(t, filepath.Join(root, "go.mod"))
	newer := newerPatch(t, want["k8s.io/api"])
	fakeRelease(t, proxy, modCache, "k8s.io/api", want["k8s.io/api"], newer)

	dir := t.TempDir()
	env := append(os.Environ(),
		"GOWORK=off", "GOTOOLCHAIN=local", "GOSUMDB=off", "GOMODCACHE="+filepath.Join(dir, "modcache"),
		// -trimpath: the packages compiled from this module cache are
		// those compiled from the machine's, and found in the build cache.
		"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -modcacherw -trimpath"),
		// The module cache of this machine before the network: the
		// guide's modules are there when make test runs this.
		"GOPROXY="+fileURL(proxy)+","+fileURL(filepath.Join(modCache, "cache", "download"))+","+origProxy,
	)
	module := filepath.Join(dir, "greeting")
	data, err := os.ReadFile(guide)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?ms)^```(sh|go|yaml)( file=(\\S+))?\n(.*?)^```\n").FindAllStringSubmatchIndex(string(data), -1)
	end := strings.Index(string(data), "\n## 5.")
	ran := 0
	for _, b := range blocks {
		if b[0] > end {
			break
		}
		lang, body := string(data[b[2]:b[3]]), string(data[b[8]:b[9]])
		if lang != "sh" {
			name := filepath.Join(module, filepath.FromSlash(string(data[b[6]:b[7]])))
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		cmd := exec.Command("bash", "-e", "-x", "-c", body)
		cmd.Dir, cmd.Env = module, env
		if strings.Contains(body, "mkdir greeting") {
			cmd.Dir = dir
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the guide's commands\n%s\nfailed: %v\n%s", body, err, out)
		}
		ran++
	}
	if ran < 4 {
		t.Fatalf("ran %d shell blocks of steps 0 to 4, want at least 4", ran)
	}
	got := required(t, filepath.Join(module, "go.mod"))
	for _, m := range []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go"} {
		if got[m] != want[m] {
			t.Errorf("the guide's module requires %s %s, want %s (operatorkit's; %s is the latest release)", m, got[m], want[m], newer)
		}
	}
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

func fileURL(path string) string {
	abs, _ := filepath.Abs(path)
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

// required returns the versions a go.mod file requires, by module path.
func required(t *testing.T, gomod string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(?:require )?\s*(\S+) (v\S+)`).FindAllStringSubmatch(string(data), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// newerPatch returns v with a higher patch version.
func newerPatch(t *testing.T, v string) string {
	t.Helper()
	i := strings.LastIndex(v, ".")
	if i < 0 {
		t.Fatalf("version %q", v)
	}
	return v[:i] + ".999"
}

// writeVersion writes the proxy files of module path at version.
func writeVersion(t *testing.T, proxy, path, version string, mod, zipData []byte) {
	t.Helper()
	d := filepath.Join(proxy, filepath.FromSlash(path), "@v")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	list, _ := os.ReadFile(filepath.Join(d, "list"))
	files := map[string][]byte{
		"list":            append(list, version+"\n"...),
		version + ".info": fmt.Appendf(nil, `{"Version":%q,"Time":"2026-01-01T00:00:00Z"}`, version),
		version + ".mod":  mod,
		version + ".zip":  zipData,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(d, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// zipModule writes module path, from the checkout's directory dir (the
// files git knows, without those of nested modules), into proxy as
// v0.1.0.
func zipModule(t *testing.T, proxy, path, dir string) {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard", ".").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	nested := map[string]bool{}
	for _, f := range files {
		if filepath.Base(f) == "go.mod" && filepath.Dir(f) != "." {
			nested[filepath.Dir(f)] = true
		}
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	const version = "v0.1.0"
file:
	for _, f := range files {
		for d := filepath.Dir(f); d != "."; d = filepath.Dir(d) {
			if nested[d] {
				continue file
			}
		}
		data, err := os.ReadFile(filepath.Join(dir, f))
		if os.IsNotExist(err) {
			continue // deleted, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(path + "@" + version + "/" + filepath.ToSlash(f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	writeVersion(t, proxy, path, version, mod, buf.Bytes())
}

// fakeRelease writes module path at version from the module cache into
// proxy, and the same files again as the release newer.
func fakeRelease(t *testing.T, proxy, modCache, path, version, newer string) {
	t.Helper()
	dl := filepath.Join(modCache, "cache", "download", filepath.FromSlash(path), "@v", version)
	if _, err := os.Stat(dl + ".zip"); err != nil {
		if out, err := exec.Command("go", "mod", "download", path+"@"+version).CombinedOutput(); err != nil {
			t.Fatalf("go mod download %s@%s: %v\n%s", path, version, err, out)
		}
	}
	mod, err := os.ReadFile(dl + ".mod")
	if err != nil {
		t.Fatal(err)
	}
	zipData, err := os.ReadFile(dl + ".zip")
	if err != nil {
		t.Fatal(err)
	}
	writeVersion(t, proxy, path, version, mod, zipData)
	zr, err := zip.NewReader(bytes.NewReader(zipData), int64(len(zipData)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(strings.Replace(f.Name, path+"@"+version+"/", path+"@"+newer+"/", 1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, r); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	writeVersion(t, proxy, path, newer, mod, buf.Bytes())
}
