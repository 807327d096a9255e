package framework

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// TestExportedNamesHaveDocComments: every exported name of the package,
// and every exported field of its exported types, has a doc comment of its
// own stating its contract (STYLE.md): ResourcePlan.Update and Delete
// shared Create's, which a doc tool shows on Create alone.
func TestExportedNamesHaveDocComments(t *testing.T) {
	for _, missing := range undocumented(t, ".") {
		t.Errorf("%s has no doc comment", missing)
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
