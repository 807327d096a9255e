// Package doccheck holds the test that keeps every exported name of the
// repository documented; it has no code of its own.
package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExportedNamesHaveDocComments: every exported name of every package of
// the repository (every module: the library, example, bench, integration,
// testenv and the guide's code), and every exported field and method of
// its exported types, has a doc comment of its own stating its contract
// (STYLE.md). framework.ResourcePlan.Update and Delete once shared Create's,
// which a doc tool shows on Create alone.
func TestExportedNamesHaveDocComments(t *testing.T) {
	dirs := map[string]bool{}
	err := filepath.WalkDir(filepath.Join("..", ".."), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != filepath.Join("..", "..") && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dirs[filepath.Dir(path)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 20 {
		t.Fatalf("found %d package directories from ../..; want the whole repository", len(dirs))
	}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		for _, missing := range undocumented(t, dir) {
			t.Errorf("%s has no doc comment", missing)
		}
	}
}

// undocumented returns the exported names of the package in dir (its
// files other than tests) that have no doc comment of their own: types,
// functions, methods of exported types, values, and the exported fields
// and methods of exported structs and interfaces.
func undocumented(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	add := func(pos token.Pos, what string) { out = append(out, fset.Position(pos).String()+" "+what) }
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv != nil {
						rt := d.Recv.List[0].Type
						if s, ok := rt.(*ast.StarExpr); ok {
							rt = s.X
						}
						switch g := rt.(type) { // a generic type's receiver: ops[O, C]
						case *ast.IndexExpr:
							rt = g.X
						case *ast.IndexListExpr:
							rt = g.X
						}
						if id, ok := rt.(*ast.Ident); ok && !id.IsExported() {
							continue
						}
					}
					if d.Name.IsExported() && d.Doc == nil {
						add(d.Pos(), d.Name.Name)
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							if s.Doc == nil && d.Doc == nil {
								add(s.Pos(), s.Name.Name)
							}
							var fields *ast.FieldList
							switch tt := s.Type.(type) {
							case *ast.StructType:
								fields = tt.Fields
							case *ast.InterfaceType:
								fields = tt.Methods
							}
							if fields == nil {
								continue
							}
							for _, fl := range fields.List {
								for _, n := range fl.Names {
									if n.IsExported() && fl.Doc == nil && fl.Comment == nil {
										add(n.Pos(), s.Name.Name+"."+n.Name)
									}
								}
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() && s.Doc == nil && d.Doc == nil && s.Comment == nil {
									add(n.Pos(), n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}
