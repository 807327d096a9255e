package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// guideName is a name of the library's packages as docs/controller-runtime.md
// writes it: pkg.Name or pkg.Type.Member, and op.Method for a method of
// operator.Operator (the guide's variable op).
var guideName = regexp.MustCompile(`\b([a-z]+)\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)

// TestControllerRuntimeGuideNames: every name of the library that
// docs/controller-runtime.md gives (operator.New, framework.Config.Workers,
// op.Watches, informer.List, ...) exists: a function, type, value, method
// or struct field of that package. A reader coming from controller-runtime
// looks each of them up.
func TestControllerRuntimeGuideNames(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "controller-runtime.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := libraryNames(t)
	checked := 0
	for _, m := range guideName.FindAllStringSubmatch(string(data), -1) {
		pkg, name, member := m[1], m[2], m[3]
		if pkg == "op" {
			pkg, name, member = "operator", "Operator", name
		}
		decls, ok := names[pkg]
		if !ok {
			continue // not a package of the library (metav1, ctrl, ...)
		}
		checked++
		full := name
		if member != "" && decls[name] == "type" {
			full = name + "." + member
		}
		if _, ok := decls[full]; !ok {
			t.Errorf("docs/controller-runtime.md names %s, which package %s does not declare", m[0], pkg)
		}
	}
	if checked < 40 {
		t.Fatalf("checked %d names of the library in docs/controller-runtime.md; want its whole mapping", checked)
	}
}

// libraryNames returns, for each package of the library module (by package
// name), its exported declarations: "Name" for a function, type or value
// (the value "type" for a type), "Type.Method" and "Type.Field" for the
// methods and struct fields of its types (embedded fields by their type's
// name).
func libraryNames(t *testing.T) map[string]map[string]string {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string]map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && d.Name() != "testenv" {
				return filepath.SkipDir // another module (example, bench, integration)
			}
			if name := d.Name(); strings.HasPrefix(name, ".") || name == "testdata" || name == "internal" || name == "docs" {
				return filepath.SkipDir
			}
		}
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, path, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
		if err != nil {
			return err
		}
		for name, p := range pkgs {
			if name == "main" {
				continue
			}
			decls := out[name]
			if decls == nil {
				decls = map[string]string{}
				out[name] = decls
			}
			for _, f := range p.Files {
				declare(f, decls)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 15 {
		t.Fatalf("found %d packages of the library; want them all", len(out))
	}
	return out
}

// declare adds the exported declarations of f to decls.
func declare(f *ast.File, decls map[string]string) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				decls[d.Name.Name] = "func"
				continue
			}
			rt := d.Recv.List[0].Type
			if s, ok := rt.(*ast.StarExpr); ok {
				rt = s.X
			}
			switch g := rt.(type) {
			case *ast.IndexExpr:
				rt = g.X
			case *ast.IndexListExpr:
				rt = g.X
			}
			if id, ok := rt.(*ast.Ident); ok {
				decls[id.Name+"."+d.Name.Name] = "method"
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					decls[s.Name.Name] = "type"
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
							decls[s.Name.Name+"."+n.Name] = "field"
						}
						if len(fl.Names) == 0 { // embedded: by its type's name
							typ := fl.Type
							if st, ok := typ.(*ast.StarExpr); ok {
								typ = st.X
							}
							switch e := typ.(type) {
							case *ast.Ident:
								decls[s.Name.Name+"."+e.Name] = "field"
							case *ast.SelectorExpr:
								decls[s.Name.Name+"."+e.Sel.Name] = "field"
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						decls[n.Name] = "value"
					}
				}
			}
		}
	}
}
