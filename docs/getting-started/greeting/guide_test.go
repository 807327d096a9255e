package main

// This file is not part of the guide: it keeps ../../getting-started.md
// true to this module.

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
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
