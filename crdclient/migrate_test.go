package crdclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clienttesting "k8s.io/client-go/testing"
)

var gadgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}

// migratingCRD returns the Gadget CRD after its storage version moved from
// v1alpha1 to v1: both served, storedVersions lists both.
func migratingCRD() *apiextensionsv1.CustomResourceDefinition {
	crd := newCRD("Gadget")
	crd.ResourceVersion = "10"
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{
		{Name: "v1alpha1", Served: true},
		{Name: "v1", Served: true, Storage: true},
	}
	crd.Status.StoredVersions = []string{"v1alpha1", "v1"}
	return crd
}

// migrationFake is an API server for MigrateStorage: the CRD, discovery
// saying Gadgets are stored as hash says, and n Gadgets listed a page at a
// time (the continue token is the index of the next object). Hooks may
// answer a list or an update instead.
type migrationFake struct {
	ext *fake.Clientset

	mu      sync.Mutex
	objects []*unstructured.Unstructured
	lists   []string // the continue token of each list
	updates []string // namespace/name@resourceVersion of each update
	calls   int      // updates sent, answered by onUpdate or not
	// onList, when set, may answer a list with continue token cont.
	onList func(cont string) (handled bool, err error)
	// onUpdate, when set, may answer the update of obj.
	onUpdate func(obj *unstructured.Unstructured) (handled bool, err error)
	// onGet, when set, answers the read of an object by name; else a
	// read panics.
	onGet func(name string) (*unstructured.Unstructured, error)
	// fields lists the managedFields apiVersions of each update, as
	// name@resourceVersion: apiVersion,...
	fields []string
}

func newMigrationFake(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, hash string, n int) *migrationFake {
	t.Helper()
	f := &migrationFake{ext: fake.NewClientset(crd)}
	f.ext.Resources = []*metav1.APIResourceList{{
		GroupVersion: "example.com/v1",
		APIResources: []metav1.APIResource{{Name: "gadgets", Kind: "Gadget", Namespaced: true, StorageVersionHash: hash}},
	}}
	for i := range n {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion("example.com/v1")
		o.SetKind("Gadget")
		o.SetNamespace("ns" + strconv.Itoa(i%2))
		o.SetName(fmt.Sprintf("g%d", i))
		o.SetResourceVersion(strconv.Itoa(100 + i))
		f.objects = append(f.objects, o)
	}
	return f
}

// fakeDynamic is the dynamic client of a migrationFake: it serves List
// (with Limit and Continue, which client-go's fake dynamic client drops)
// and Update of Gadgets; any other call panics.
type fakeDynamic struct {
	dynamic.NamespaceableResourceInterface // nil
	f                                      *migrationFake
	namespace                              string
}

func (d *fakeDynamic) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	if gvr != gadgets {
		panic(fmt.Sprintf("resource %v", gvr))
	}
	return d
}

func (d *fakeDynamic) Namespace(ns string) dynamic.ResourceInterface {
	return &fakeDynamic{f: d.f, namespace: ns}
}

func (d *fakeDynamic) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if d.namespace != "" {
		panic("list in namespace " + d.namespace)
	}
	f.lists = append(f.lists, opts.Continue)
	if f.onList != nil {
		if handled, err := f.onList(opts.Continue); handled {
			return nil, err
		}
	}
	start := 0
	if opts.Continue != "" {
		start, _ = strconv.Atoi(strings.TrimPrefix(opts.Continue, "x"))
	}
	end := min(start+int(opts.Limit), len(f.objects))
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("example.com/v1")
	list.SetKind("GadgetList")
	for _, o := range f.objects[start:end] {
		list.Items = append(list.Items, *o.DeepCopy())
	}
	if end < len(f.objects) {
		list.SetContinue(strconv.Itoa(end))
	}
	return list, nil
}

func (d *fakeDynamic) Update(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions, subresources ...string) (*unstructured.Unstructured, error) {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if d.namespace != obj.GetNamespace() || len(subresources) != 0 {
		panic(fmt.Sprintf("update of %s/%s in namespace %q, subresources %v", obj.GetNamespace(), obj.GetName(), d.namespace, subresources))
	}
	f.calls++
	if f.onUpdate != nil {
		if handled, err := f.onUpdate(obj); handled {
			return nil, err
		}
	}
	f.updates = append(f.updates, obj.GetNamespace()+"/"+obj.GetName()+"@"+obj.GetResourceVersion())
	var versions []string
	for _, e := range obj.GetManagedFields() {
		versions = append(versions, e.APIVersion)
	}
	f.fields = append(f.fields, obj.GetName()+"@"+obj.GetResourceVersion()+": "+strings.Join(versions, ","))
	return obj, nil
}

func (d *fakeDynamic) Get(ctx context.Context, name string, opts metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error) {
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.onGet == nil || len(subresources) != 0 {
		panic(fmt.Sprintf("get of %s/%s, subresources %v", d.namespace, name, subresources))
	}
	return f.onGet(name)
}

func (f *migrationFake) client(t *testing.T, pageSize int64) *CRDClient {
	t.Helper()
	c, err := New(Config{Client: f.ext, Dynamic: &fakeDynamic{f: f}, MigrationPageSize: pageSize})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// storedVersions returns the CRD's status.storedVersions in the fake.
func (f *migrationFake) storedVersions(t *testing.T) []string {
	t.Helper()
	crd, err := f.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), "gadgets.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return crd.Status.StoredVersions
}

// crdWrites lists the writes of CRDs sent so far.
func (f *migrationFake) crdWrites() []string {
	var ws []string
	for _, a := range f.ext.Actions() {
		if a.GetResource().Resource == crdResource && a.GetVerb() != "get" && a.GetVerb() != "list" {
			ws = append(ws, a.GetVerb()+"/"+a.GetSubresource())
		}
	}
	return ws
}

var v1Hash = storageVersionHash("example.com", "v1", "Gadget")

func TestMigrateStorageNothingToDo(t *testing.T) {
	crd := migratingCRD()
	crd.Status.StoredVersions = []string{"v1"}
	f := newMigrationFake(t, crd, v1Hash, 3)
	m, err := f.client(t, 0).MigrateStorage(t.Context(), newCRD("Gadget"), fastBackOff(3))
	if err != nil {
		t.Fatal(err)
	}
	if m.StorageVersion != "v1" || m.Rewritten != 0 || m.Skipped != 0 {
		t.Errorf("MigrateStorage = %+v, want nothing done", m)
	}
	if len(f.lists) != 0 || f.calls != 0 || len(f.crdWrites()) != 0 {
		t.Errorf("MigrateStorage with nothing to do listed %d times, wrote %d objects and CRDs %v", len(f.lists), f.calls, f.crdWrites())
	}
}

// TestMigrateStoragePagesAndSkips: every object is written back as listed
// (with its resourceVersion), pages of 2; a conflict (written since) and a
// not found (deleted since) are skipped, not retried; storedVersions is v1
// alone after.
func TestMigrateStoragePagesAndSkips(t *testing.T) {
	f := newMigrationFake(t, migratingCRD(), v1Hash, 7)
	tries := map[string]int{}
	f.onUpdate = func(obj *unstructured.Unstructured) (bool, error) {
		tries[obj.GetName()]++
		switch obj.GetName() {
		case "g2":
			return true, apierrors.NewConflict(gadgets.GroupResource(), obj.GetName(), errors.New("the object has been modified"))
		case "g5":
			return true, apierrors.NewNotFound(gadgets.GroupResource(), obj.GetName())
		}
		return false, nil
	}
	m, err := f.client(t, 2).MigrateStorage(t.Context(), newCRD("Gadget"), fastBackOff(3))
	if err != nil {
		t.Fatal(err)
	}
	if m.Rewritten != 5 || m.Skipped != 2 || !slices.Equal(m.StoredVersions, []string{"v1alpha1", "v1"}) {
		t.Errorf("MigrateStorage = %+v, want 5 rewritten, 2 skipped, from [v1alpha1 v1]", m)
	}
	if want := []string{"", "2", "4", "6"}; !slices.Equal(f.lists, want) {
		t.Errorf("list continue tokens = %q, want %q", f.lists, want)
	}
	if want := []string{"ns0/g0@100", "ns1/g1@101", "ns1/g3@103", "ns0/g4@104", "ns0/g6@106"}; !slices.Equal(f.updates, want) {
		t.Errorf("updates = %q, want %q", f.updates, want)
	}
	if tries["g2"] != 1 || tries["g5"] != 1 {
		t.Errorf("conflicting and deleted objects tried %d and %d times, want once", tries["g2"], tries["g5"])
	}
	if got := f.storedVersions(t); !slices.Equal(got, []string{"v1"}) {
		t.Errorf("storedVersions = %v, want [v1]", got)
	}
}

// withFields sets the managedFields of o: one entry per apiVersion given.
func withFields(o *unstructured.Unstructured, apiVersions ...string) *unstructured.Unstructured {
	var entries []metav1.ManagedFieldsEntry
	for i, v := range apiVersions {
		entries = append(entries, metav1.ManagedFieldsEntry{Manager: fmt.Sprintf("m%d", i), Operation: metav1.ManagedFieldsOperationApply, APIVersion: v})
	}
	o.SetManagedFields(entries)
	return o
}

// TestMigrateStorageManagedFieldsEntries: each object is written back with
// its managedFields entries of the group's other versions naming the
// storage version (the API server refuses every write of an object with an
// entry of a version the CRD no longer has), entries of another group left
// alone. A conflicting object whose entries named an old version is read
// again and written again while the entries it has now still do; one whose
// entries name the storage version only by then is skipped.
func TestMigrateStorageManagedFieldsEntries(t *testing.T) {
	f := newMigrationFake(t, migratingCRD(), v1Hash, 4)
	withFields(f.objects[0], "example.com/v1alpha1", "example.com/v1", "other.example.com/v1beta1")
	withFields(f.objects[1], "example.com/v1alpha1")
	withFields(f.objects[2], "example.com/v1alpha1")
	withFields(f.objects[3], "example.com/v1")
	conflicts := map[string]bool{"g1": true, "g2": true}
	f.onUpdate = func(obj *unstructured.Unstructured) (bool, error) {
		if conflicts[obj.GetName()] && obj.GetResourceVersion() != "200" {
			return true, apierrors.NewConflict(gadgets.GroupResource(), obj.GetName(), errors.New("the object has been modified"))
		}
		return false, nil
	}
	f.onGet = func(name string) (*unstructured.Unstructured, error) {
		i, _ := strconv.Atoi(strings.TrimPrefix(name, "g"))
		o := f.objects[i].DeepCopy()
		o.SetResourceVersion("200")
		if name == "g1" {
			return withFields(o, "example.com/v1alpha1", "example.com/v1"), nil // still old
		}
		return withFields(o, "example.com/v1"), nil // written in v1 meanwhile
	}
	m, err := f.client(t, 0).MigrateStorage(t.Context(), newCRD("Gadget"), fastBackOff(3))
	if err != nil {
		t.Fatal(err)
	}
	if m.Rewritten != 3 || m.Skipped != 1 {
		t.Errorf("MigrateStorage = %+v, want 3 rewritten, 1 skipped", m)
	}
	want := []string{
		"g0@100: example.com/v1,example.com/v1,other.example.com/v1beta1",
		"g1@200: example.com/v1,example.com/v1",
		"g3@103: example.com/v1",
	}
	if !slices.Equal(f.fields, want) {
		t.Errorf("managedFields apiVersions written = %q, want %q", f.fields, want)
	}
}

// TestMigrateStorageExpiredContinue: a continue token that expired (410)
// goes on with the token the API server gives for the rest, or, without
// one, lists again from the start.
func TestMigrateStorageExpiredContinue(t *testing.T) {
	for _, tt := range []struct {
		name      string
		token     string // in the 410
		wantLists []string
		wantCount int
	}{
		{name: "inconsistent continue", token: "x4", wantLists: []string{"", "2", "x4"}, wantCount: 4},
		{name: "no token", wantLists: []string{"", "2", "", "2", "4"}, wantCount: 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newMigrationFake(t, migratingCRD(), v1Hash, 6)
			expired := false
			f.onList = func(cont string) (bool, error) {
				if cont != "2" || expired {
					return false, nil
				}
				expired = true
				err := apierrors.NewResourceExpired("The provided continue parameter is too old")
				err.ErrStatus.ListMeta.Continue = tt.token
				return true, err
			}
			m, err := f.client(t, 2).MigrateStorage(t.Context(), newCRD("Gadget"), fastBackOff(3))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.lists, tt.wantLists) {
				t.Errorf("list continue tokens = %q, want %q", f.lists, tt.wantLists)
			}
			if m.Rewritten != tt.wantCount {
				t.Errorf("rewritten %d, want %d (updates %q)", m.Rewritten, tt.wantCount, f.updates)
			}
			if got := f.storedVersions(t); !slices.Equal(got, []string{"v1"}) {
				t.Errorf("storedVersions = %v, want [v1]", got)
			}
		})
	}
}

// TestMigrateStorageStatusConflict: the storedVersions update carries the
// CRD's resourceVersion; a conflict reads the CRD again and retries.
func TestMigrateStorageStatusConflict(t *testing.T) {
	f := newMigrationFake(t, migratingCRD(), v1Hash, 1)
	var versions []string
	f.ext.PrependReactor("update", crdResource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		versions = append(versions, a.(clienttesting.UpdateAction).GetObject().(*apiextensionsv1.CustomResourceDefinition).ResourceVersion)
		if len(versions) == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: crdResource}, "gadgets.example.com", errors.New("modified"))
		}
		return false, nil, nil
	})
	if _, err := f.client(t, 0).MigrateStorage(t.Context(), newCRD("Gadget"), fastBackOff(3)); err != nil {
		t.Fatal(err)
	}
	if want := []string{"10", "10"}; !slices.Equal(versions, want) {
		t.Errorf("status updates with resourceVersions %q, want %q", versions, want)
	}
	gets := 0
	for _, a := range f.ext.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == crdResource {
			gets++
		}
	}
	if gets != 3 { // before, and before each status update
		t.Errorf("CRD read %d times, want 3", gets)
	}
	if got := f.storedVersions(t); !slices.Equal(got, []string{"v1"}) {
		t.Errorf("storedVersions = %v, want [v1]", got)
	}
}

// TestMigrateStorageLeavesStoredVersions: when the migration cannot be
// trusted or did not finish, status.storedVersions stays as it was.
func TestMigrateStorageLeavesStoredVersions(t *testing.T) {
	for _, tt := range []struct {
		name     string
		hash     string
		setup    func(f *migrationFake)
		wantErr  error
		wantText []string
	}{{
		name: "storage version changed meanwhile",
		hash: v1Hash,
		setup: func(f *migrationFake) {
			changed := false
			f.onUpdate = func(*unstructured.Unstructured) (bool, error) {
				if changed {
					return false, nil
				}
				changed = true
				crd := migratingCRD()
				crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true, Storage: true})
				crd.Spec.Versions[1].Storage = false
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, "v2")
				_, err := f.ext.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), crd, metav1.UpdateOptions{})
				return false, err
			}
		},
		wantErr:  ErrStorageVersionChanged,
		wantText: []string{"gadgets.example.com", "from v1 to v2"},
	}, {
		name: "object refused",
		hash: v1Hash,
		setup: func(f *migrationFake) {
			f.onUpdate = func(obj *unstructured.Unstructured) (bool, error) {
				return true, apierrors.NewForbidden(gadgets.GroupResource(), obj.GetName(), errors.New("no"))
			}
		},
		wantText: []string{"gadgets.example.com", "Gadget ns0/g0", "example.com/v1", "forbidden"},
	}, {
		name:     "discovery says the old storage version",
		hash:     storageVersionHash("example.com", "v1alpha1", "Gadget"),
		wantErr:  ErrTimeout,
		wantText: []string{"gadgets.example.com", "stored in another version than v1"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newMigrationFake(t, migratingCRD(), tt.hash, 2)
			if tt.setup != nil {
				tt.setup(f)
			}
			_, err := f.client(t, 0).MigrateStorage(t.Context(), newCRD("Gadget"), fastBackOff(3))
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("MigrateStorage = %v, want %v", err, tt.wantErr)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if got := f.storedVersions(t); len(got) < 2 {
				t.Errorf("storedVersions = %v, want it left as it was", got)
			}
			if tt.hash != v1Hash && len(f.lists)+f.calls != 0 {
				t.Errorf("listed or wrote objects before discovery said they are stored in v1: %q, %d", f.lists, f.calls)
			}
		})
	}
}

func TestMigrateStorageNeedsDynamic(t *testing.T) {
	f := newMigrationFake(t, migratingCRD(), v1Hash, 1)
	c, err := New(Config{Client: f.ext})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.MigrateStorage(t.Context(), newCRD("Gadget"), nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("MigrateStorage without Config.Dynamic = %v, want ErrInvalidConfig", err)
	}
	if len(f.ext.Actions()) != 0 {
		t.Errorf("sent %v", f.ext.Actions())
	}
}

// TestMigrateStorageGoesOnPastRefusedObjects: objects whose rewrite the
// API server refuses as invalid (a validation rule they no longer pass) or
// bad do not stop the migration of the others; the error names each (up to
// maxRefusedNamed), and status.storedVersions is left as it was.
func TestMigrateStorageGoesOnPastRefusedObjects(t *testing.T) {
	const n = 30
	f := newMigrationFake(t, migratingCRD(), v1Hash, n)
	refuse := func(name string) bool { // g1, g3, ..., g25: 13 objects
		i, _ := strconv.Atoi(strings.TrimPrefix(name, "g"))
		return i%2 == 1 && i < 26
	}
	f.onUpdate = func(obj *unstructured.Unstructured) (bool, error) {
		if !refuse(obj.GetName()) {
			return false, nil
		}
		if obj.GetName() == "g1" {
			return true, apierrors.NewBadRequest("admission webhook denied the request")
		}
		return true, apierrors.NewInvalid(schema.GroupKind{Group: "example.com", Kind: "Gadget"}, obj.GetName(), nil)
	}
	m, err := f.client(t, 7).MigrateStorage(t.Context(), newCRD("Gadget"), fastBackOff(3))
	if err == nil || !apierrors.IsBadRequest(err) { // the first refused: g1
		t.Fatalf("MigrateStorage = %v, want an error wrapping the API server's answers", err)
	}
	if m.Refused != 13 || m.Rewritten != n-13 || len(f.updates) != n-13 {
		t.Errorf("refused %d, rewritten %d (%d updates), want 13 and %d: the objects after a refused one must be written", m.Refused, m.Rewritten, len(f.updates), n-13)
	}
	for _, s := range []string{"gadgets.example.com", "13 objects", "the first 10 named", "ns1/g1", "admission webhook denied", "ns1/g19"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if strings.Contains(err.Error(), "ns1/g21 ") {
		t.Errorf("error names more than %d objects: %q", maxRefusedNamed, err)
	}
	if got := f.storedVersions(t); len(got) < 2 {
		t.Errorf("storedVersions = %v, want it left as it was", got)
	}
}

// TestRetargetMergesEntriesOfOneManager: entries that name the same
// manager, operation, subresource and (for an update) version once
// retargeted become one, owning the fields of each at the latest time;
// entries of other subresources, managers or operations stay apart.
func TestRetargetMergesEntriesOfOneManager(t *testing.T) {
	at := func(sec int64) *metav1.Time { tm := metav1.Unix(sec, 0); return &tm }
	fields := func(raw string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(raw)} }
	entry := func(manager string, op metav1.ManagedFieldsOperationType, version, sub string, sec int64, raw string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: version, Subresource: sub, Time: at(sec), FieldsType: "FieldsV1", FieldsV1: fields(raw)}
	}
	const (
		update = metav1.ManagedFieldsOperationUpdate
		apply  = metav1.ManagedFieldsOperationApply
	)
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget"}}
	o.SetManagedFields([]metav1.ManagedFieldsEntry{
		entry("editor", update, "example.com/v1", "", 20, `{"f:metadata":{"f:labels":{"f:new":{}}}}`),
		entry("editor", update, "example.com/v1alpha1", "", 10, `{"f:metadata":{"f:labels":{"f:old":{}}}}`),
		entry("editor", update, "example.com/v1alpha1", "status", 10, `{"f:status":{"f:n":{}}}`),
		entry("user", apply, "example.com/v1alpha1", "", 10, `{"f:spec":{"f:n":{}}}`),
	})
	if !retarget(o, "v1") {
		t.Fatal("retarget = false, want true")
	}
	got := o.GetManagedFields()
	want := []metav1.ManagedFieldsEntry{
		entry("editor", update, "example.com/v1", "", 20, `{"f:metadata":{"f:labels":{"f:new":{},"f:old":{}}}}`),
		entry("editor", update, "example.com/v1", "status", 10, `{"f:status":{"f:n":{}}}`),
		entry("user", apply, "example.com/v1", "", 10, `{"f:spec":{"f:n":{}}}`),
	}
	if len(got) != len(want) {
		t.Fatalf("managedFields = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Manager != w.Manager || g.Operation != w.Operation || g.APIVersion != w.APIVersion || g.Subresource != w.Subresource ||
			!g.Time.Equal(w.Time) || string(g.FieldsV1.Raw) != string(w.FieldsV1.Raw) {
			t.Errorf("entry %d = %+v %s, want %+v %s", i, g, g.FieldsV1.Raw, w, w.FieldsV1.Raw)
		}
	}
}

// TestMigrateStorageRefusedErrorReadsWell: the error of a migration with
// refused objects names the CRD once, then each object with the API
// server's answer, and counts one object as one.
func TestMigrateStorageRefusedErrorReadsWell(t *testing.T) {
	for _, refused := range []int{1, 3} {
		f := newMigrationFake(t, migratingCRD(), v1Hash, 4)
		f.onUpdate = func(obj *unstructured.Unstructured) (bool, error) {
			if i, _ := strconv.Atoi(strings.TrimPrefix(obj.GetName(), "g")); i >= refused {
				return false, nil
			}
			return true, apierrors.NewInvalid(schema.GroupKind{Group: "example.com", Kind: "Gadget"}, obj.GetName(), nil)
		}
		_, err := f.client(t, 0).MigrateStorage(t.Context(), newCRD("Gadget"), fastBackOff(3))
		if err == nil {
			t.Fatalf("%d refused: MigrateStorage = nil, want an error", refused)
		}
		if n := strings.Count(err.Error(), "gadgets.example.com"); n != 1 {
			t.Errorf("%d refused: error names the CRD %d times, want once: %q", refused, n, err)
		}
		if n := strings.Count(err.Error(), "rewrite Gadget "); n != refused {
			t.Errorf("%d refused: error names %d objects: %q", refused, n, err)
		}
		want := fmt.Sprintf("refused the rewrite of %d objects; they stay", refused)
		if refused == 1 {
			want = "refused the rewrite of 1 object; it stays"
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
