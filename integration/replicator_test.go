package integration

// The config-replicator operator, written from operatorkit's docs alone
// (README.md, docs/*.md, the packages' doc.go and godoc): a cluster-scoped
// SharedConfig selects Namespaces by label and gets one ConfigMap of its
// data in each of them. Its children are not its own Namespace's (it has
// none) and the set of them follows the Namespaces' labels, which the
// operator watches but does not own.

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/statuscontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	retrypkg "github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
)

// ---- the operator (counted: see the report of this port) ----

const replicatorOperator = "config-replicator"

// SharedConfig asks for a ConfigMap named Spec.ConfigMapName holding
// Spec.Data in every Namespace that Spec.NamespaceSelector selects.
type SharedConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              SharedConfigSpec   `json:"spec"`
	Status            SharedConfigStatus `json:"status,omitempty"`
}

// SharedConfigSpec is the desired state of a SharedConfig.
type SharedConfigSpec struct {
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
	ConfigMapName     string               `json:"configMapName"`
	Data              map[string]string    `json:"data,omitempty"`
}

// SharedConfigStatus is written by the Framework, in one apply: the
// conditions, observedGeneration, and Namespaces, the Namespaces that hold
// a copy (sorted), which the namespaces resource sets.
type SharedConfigStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	Namespaces         []string           `json:"namespaces,omitempty"`
}

// DeepCopyObject is what controller-gen would write.
func (s *SharedConfig) DeepCopyObject() runtime.Object {
	c := *s
	s.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	s.Spec.NamespaceSelector.DeepCopyInto(&c.Spec.NamespaceSelector)
	c.Spec.Data = maps.Clone(s.Spec.Data)
	c.Status.Conditions = slices.Clone(s.Status.Conditions)
	c.Status.Namespaces = slices.Clone(s.Status.Namespaces)
	return &c
}

// sharedConfigCRD is the cluster-scoped SharedConfig CRD in group, as
// controller-gen writes it.
func sharedConfigCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	crd := backupCRD(group)
	crd.Name = "sharedconfigs." + group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "sharedconfigs", Kind: "SharedConfig"}
	crd.Spec.Scope = apiextensionsv1.ClusterScoped
	str, preserve := apiextensionsv1.JSONSchemaProps{Type: "string"}, true
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
	props["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"namespaceSelector", "configMapName"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"namespaceSelector": {Type: "object", XPreserveUnknownFields: &preserve},
			"configMapName":     str,
			"data":              {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}},
		}}
	props["status"].Properties["namespaces"] = apiextensionsv1.JSONSchemaProps{Type: "array",
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}}
	return crd
}

// replicator is what the resources of the operator share: the caches.
type replicator struct {
	sharedConfigs, namespaces, configMaps *operatorpkg.SharedInformer
}

// runReplicator runs the operator until the test ends, installing the CRD
// first.
func runReplicator(t *testing.T, config operatorpkg.Config, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	op, err := operatorpkg.New(config)
	must(t, err)
	r := &replicator{}
	r.sharedConfigs, err = op.Informer(informer.Config{GVR: gvr, ObjectType: &SharedConfig{}})
	must(t, err)
	// Only the Namespaces' labels are read: metadata alone, every Namespace.
	r.namespaces, err = op.Informer(informer.Config{GVR: corev1.SchemeGroupVersion.WithResource("namespaces"), ObjectType: &metav1.PartialObjectMetadata{}})
	must(t, err)
	// The copies, in every namespace, this operator's only.
	r.configMaps, err = op.Informer(informer.Config{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), ObjectType: &corev1.ConfigMap{},
		LabelSelector: child.LabelManagedBy + "=" + replicatorOperator})
	must(t, err)

	copies, err := child.New(child.Config[*SharedConfig, *corev1.ConfigMap]{
		Name: "configmaps", Client: child.Typed(op.Kubernetes().CoreV1().ConfigMaps), Cache: r.configMaps,
		FieldManager: replicatorOperator, Writes: op.OwnWrites(),
		DesiredSet: func(_ context.Context, sc *SharedConfig) ([]*corev1.ConfigMap, error) {
			in, _, err := r.selected(sc)
			if err != nil {
				return nil, err
			}
			set := make([]*corev1.ConfigMap, 0, len(in))
			for _, ns := range in {
				set = append(set, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: sc.Spec.ConfigMapName, Namespace: ns}, Data: sc.Spec.Data})
			}
			return set, nil
		},
	})
	must(t, err)
	rtr, err := router.Single("v1", replicatorStatus{r}, copies, replicatorConflicts{r})
	must(t, err)
	f, err := op.NewFramework(framework.Config{Name: replicatorOperator, Informer: r.sharedConfigs, ResourceRouter: rtr, Resource: gvr, Conditions: true, CRD: crd})
	must(t, err)
	kind := schema.GroupKind{Group: gvr.Group, Kind: "SharedConfig"}
	must(t, op.Owns(f, kind, r.configMaps))
	// A Namespace wakes the SharedConfigs that select it (on an update,
	// Watches wakes those that selected it before as well).
	selecting := operatorpkg.Selecting(r.sharedConfigs, func(sc *SharedConfig) (labels.Selector, error) {
		return metav1.LabelSelectorAsSelector(&sc.Spec.NamespaceSelector)
	})
	must(t, op.Watches(f, r.namespaces, selecting))
	// A copy wakes the other SharedConfigs that want a ConfigMap of its
	// name in its Namespace: one refused for it takes it over once it goes.
	must(t, op.Watches(f, r.configMaps, func(obj any) []string {
		cm := obj.(*corev1.ConfigMap)
		ns, ok, err := informer.Get[*metav1.PartialObjectMetadata](r.namespaces, "", cm.Namespace)
		if err != nil || !ok {
			return nil
		}
		return slices.DeleteFunc(selecting(ns), func(key string) bool {
			sc, ok, err := informer.Get[*SharedConfig](r.sharedConfigs, "", key)
			return err != nil || !ok || sc.Spec.ConfigMapName != cm.Name
		})
	}))
	stop, _ := runOperator(op)
	t.Cleanup(func() { must(t, stop()) })
}

// selected returns the Namespaces, sorted, that should hold sc's copy: those
// its selector selects, but those being deleted (nothing can be created
// there) and those where another SharedConfig's copy has the name
// (conflicts, sorted too).
func (r *replicator) selected(sc *SharedConfig) (in, conflicts []string, err error) {
	sel, err := metav1.LabelSelectorAsSelector(&sc.Spec.NamespaceSelector)
	if err != nil {
		return nil, nil, retrypkg.Permanent(conditioncontext.WithReason(err, "InvalidSelector"))
	}
	namespaces, err := informer.List[*metav1.PartialObjectMetadata](r.namespaces, "", sel)
	if err != nil {
		return nil, nil, err
	}
	for _, ns := range namespaces {
		if ns.DeletionTimestamp != nil {
			continue
		}
		cm, ok, err := informer.Get[*corev1.ConfigMap](r.configMaps, ns.Name, sc.Spec.ConfigMapName)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			in = append(in, ns.Name)
			continue
		}
		if ctrl := metav1.GetControllerOfNoCopy(cm); ctrl != nil && ctrl.UID != sc.UID {
			conflicts = append(conflicts, fmt.Sprintf("%s (SharedConfig %s)", ns.Name, ctrl.Name))
			continue
		}
		in = append(in, ns.Name)
	}
	return in, conflicts, nil
}

// replicatorStatus sets status.namespaces.
type replicatorStatus struct{ *replicator }

func (replicatorStatus) Name() string { return "status" }

func (r replicatorStatus) EnsureCreated(ctx context.Context, obj any) error {
	in, _, err := r.selected(obj.(*SharedConfig))
	if err == nil {
		statuscontext.Set(ctx, "namespaces", in)
	}
	return err
}

func (replicatorStatus) EnsureDeleted(context.Context, any) error { return nil }

// replicatorConflicts fails, after the copies were written, when a
// Namespace holds another SharedConfig's ConfigMap of the name: Stalled,
// until that one goes (the copies' watch wakes this one then).
type replicatorConflicts struct{ *replicator }

func (replicatorConflicts) Name() string { return "conflicts" }

func (r replicatorConflicts) EnsureCreated(_ context.Context, obj any) error {
	sc := obj.(*SharedConfig)
	if _, conflicts, err := r.selected(sc); err != nil || len(conflicts) == 0 {
		return err
	} else {
		err := fmt.Errorf("configmap %s is another SharedConfig's in namespace %s", sc.Spec.ConfigMapName, strings.Join(conflicts, ", "))
		return retrypkg.Permanent(conditioncontext.WithReason(err, "ConfigMapConflict"))
	}
}

func (replicatorConflicts) EnsureDeleted(context.Context, any) error { return nil }

// ---- the test ----

// TestReplicatorOperator runs the config replicator against the real API
// server: a SharedConfig gets its ConfigMap in every Namespace it selects
// and none in the others; a Namespace labelled later gets its copy, one
// unlabelled loses it; a copy edited or deleted by hand is put back; new
// data reaches every copy; a second SharedConfig that wants the same
// ConfigMap in some of those Namespaces is Stalled with a clear error and
// writes nothing there, and takes them over once the first goes; the delete
// of a SharedConfig removes every copy.
func TestReplicatorOperator(t *testing.T) {
	t.Parallel()
	h, reg, counter := startReplicator(t, 0)

	// Three Namespaces: two labelled env=prod, one env=dev.
	prod1, prod2, dev := h.namespace("prod"), h.namespace("prod"), h.namespace("dev")
	h.create("app", "shared", map[string]any{"matchLabels": map[string]any{h.label: "prod"}}, map[string]any{"k": "v1"})
	h.ready("app")
	h.copies("app", "shared", "v1", prod1, prod2)
	h.noCopy("shared", dev)

	// Labelled later: dev gets its copy; a new prod Namespace gets one.
	h.relabel(dev, "prod")
	prod3 := h.namespace("prod")
	h.copies("app", "shared", "v1", prod1, prod2, dev, prod3)
	// Unlabelled: pruned.
	h.relabel(prod2, "")
	h.copies("app", "shared", "v1", prod1, dev, prod3)
	h.noCopy("shared", prod2)

	// A copy edited or deleted by hand is put back.
	_, err := h.kube.CoreV1().ConfigMaps(prod1).Patch(t.Context(), "shared", types.MergePatchType, []byte(`{"data":{"k":"edited"}}`), metav1.PatchOptions{})
	must(t, err)
	must(t, h.kube.CoreV1().ConfigMaps(dev).Delete(t.Context(), "shared", metav1.DeleteOptions{}))
	h.copies("app", "shared", "v1", prod1, dev, prod3)

	// New data reaches every copy.
	h.patch("app", `{"spec":{"data":{"k":"v2"}}}`)
	h.copies("app", "shared", "v2", prod1, dev, prod3)
	h.ready("app")

	// A second SharedConfig wants "shared" where the first has it (and in
	// prod2, free): it gets prod2, and is Stalled for the others, which stay
	// the first's, without a write war.
	h.relabel(prod2, "team")
	h.create("team", "shared", map[string]any{"matchExpressions": []any{map[string]any{"key": h.label, "operator": "In", "values": []any{"team", "prod"}}}},
		map[string]any{"k": "team"})
	u, err := env.WaitCondition(t.Context(), h.gvr, "", "team", conditioncontext.Stalled, metav1.ConditionTrue, "ConfigMapConflict")
	must(t, err)
	for _, ns := range []string{prod1, dev, prod3} {
		if msg := conditionMessage(u, conditioncontext.Ready); !strings.Contains(msg, ns+" (SharedConfig app)") {
			t.Errorf("Ready message of the second SharedConfig %q, want the namespace %s and the SharedConfig app named", msg, ns)
		}
	}
	h.copies("team", "shared", "team", prod2)
	h.copies("app", "shared", "v2", prod1, dev, prod3)
	h.quiet("two SharedConfigs over one ConfigMap", reg, counter, 2)
	h.copies("app", "shared", "v2", prod1, dev, prod3)

	// The first goes: the second takes its Namespaces over.
	must(t, h.client.Delete(t.Context(), "app", metav1.DeleteOptions{}))
	h.gone("app")
	h.copies("team", "shared", "team", prod1, prod2, dev, prod3)
	h.ready("team")
	must(t, h.client.Delete(t.Context(), "team", metav1.DeleteOptions{}))
	h.gone("team")
	h.noCopy("shared", prod1, prod2, dev, prod3)
}

// TestReplicatorConflictAtOnce: two SharedConfigs that want one ConfigMap
// name in the same Namespaces, created at once, do not fight: each
// Namespace's copy is one of theirs, each one that lacks a copy is
// Stalled naming the other, and nothing is written once they settled.
func TestReplicatorConflictAtOnce(t *testing.T) {
	t.Parallel()
	h, reg, counter := startReplicator(t, 0)
	namespaces := []string{h.namespace("both"), h.namespace("both"), h.namespace("both")}
	selector := map[string]any{"matchLabels": map[string]any{h.label: "both"}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.create("x", "one", selector, map[string]any{"k": "x"})
	}()
	h.create("y", "one", selector, map[string]any{"k": "y"})
	<-done
	// settled reports whether each Namespace holds the copy of x or y, and
	// each of them is Ready with all three or Stalled on the conflict.
	settled := func(ctx context.Context) (bool, error) {
		held := map[string]int{}
		for _, ns := range namespaces {
			cm, err := h.kube.CoreV1().ConfigMaps(ns).Get(ctx, "one", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			ref := metav1.GetControllerOf(cm)
			if ref == nil || cm.Data["k"] != ref.Name {
				return false, nil
			}
			held[ref.Name]++
		}
		for _, name := range []string{"x", "y"} {
			u, err := h.client.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			want, reason := conditioncontext.Stalled, "ConfigMapConflict"
			if held[name] == len(namespaces) {
				want, reason = conditioncontext.Ready, "ReconciliationSucceeded"
			}
			if !slices.ContainsFunc(conds, func(c any) bool {
				m, _ := c.(map[string]any)
				return m["type"] == want && m["status"] == "True" && m["reason"] == reason
			}) {
				return false, nil
			}
		}
		return true, nil
	}
	h.eventually("x and y settled", settled)
	h.quiet("two SharedConfigs created at once over one ConfigMap", reg, counter, 2)
	if ok, err := settled(t.Context()); !ok || err != nil {
		t.Fatalf("x and y no longer settled after the quiet window: %v", err)
	}
	for _, name := range []string{"x", "y"} {
		must(t, h.client.Delete(t.Context(), name, metav1.DeleteOptions{}))
		h.gone(name)
	}
	h.noCopy("one", namespaces...)
}

// TestReplicatorNamespaceTerminating: a Namespace that holds a copy is
// deleted (Terminating: this API server has no namespace controller, the
// test plays it); the SharedConfig deletes its copy there and stays Ready,
// does not loop, and the Namespace goes once the test removes its
// finalizer.
func TestReplicatorNamespaceTerminating(t *testing.T) {
	t.Parallel()
	h, reg, counter := startReplicator(t, 0)
	keep, doomed := h.namespace("on"), h.namespace("on")
	h.create("cfg", "cfg", map[string]any{"matchLabels": map[string]any{h.label: "on"}}, map[string]any{"a": "b"})
	h.ready("cfg")
	h.copies("cfg", "cfg", "", keep, doomed)

	must(t, h.kube.CoreV1().Namespaces().Delete(t.Context(), doomed, metav1.DeleteOptions{}))
	// The namespace controller deletes the content, then finalizes.
	h.eventually("the copy in the Terminating namespace deleted", func(ctx context.Context) (bool, error) {
		err := h.kube.CoreV1().ConfigMaps(doomed).Delete(ctx, "cfg", metav1.DeleteOptions{})
		return apierrors.IsNotFound(err), nil
	})
	h.statusNamespaces("cfg", keep)
	h.ready("cfg")
	h.quiet("a SharedConfig beside a Terminating namespace", reg, counter, 2)
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := h.kube.CoreV1().Namespaces().Get(t.Context(), doomed, metav1.GetOptions{})
		if err == nil {
			n.Spec.Finalizers = nil
			_, err = h.kube.CoreV1().Namespaces().Finalize(t.Context(), n, metav1.UpdateOptions{})
		}
		return err
	}))
	h.eventually("the Namespace gone", func(ctx context.Context) (bool, error) {
		_, err := h.kube.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	h.ready("cfg")
	h.copies("cfg", "cfg", "", keep)
	must(t, h.client.Delete(t.Context(), "cfg", metav1.DeleteOptions{}))
	h.gone("cfg")
	h.noCopy("cfg", keep)
}

// TestReplicatorScale: a SharedConfig over 50 Namespaces; a steady resync
// (every second here) writes nothing and reconciles a bounded number of
// times.
func TestReplicatorScale(t *testing.T) {
	t.Parallel()
	h, reg, counter := startReplicator(t, time.Second)
	var namespaces []string
	for range 50 {
		namespaces = append(namespaces, h.namespace("many"))
	}
	h.create("many", "many", map[string]any{"matchLabels": map[string]any{h.label: "many"}}, map[string]any{"x": "y"})
	h.ready("many")
	h.copies("many", "many", "", namespaces...)
	// Resyncs every second: over 4 s, 4 or 5 reconciliations of the one
	// SharedConfig, and no write.
	h.quiet("a steady SharedConfig of 50 namespaces", reg, counter, 10)
	must(t, h.client.Delete(t.Context(), "many", metav1.DeleteOptions{}))
	h.gone("many")
	h.noCopy("many", namespaces...)
}

// replicatorHarness holds the clients of a replicator test and the label
// key its Namespaces carry (one of the test's own: other tests' Namespaces
// share the server).
type replicatorHarness struct {
	t      *testing.T
	gvr    schema.GroupVersionResource
	label  string
	kube   kubernetes.Interface
	client dynamic.ResourceInterface
}

// startReplicator runs the replicator over a SharedConfig CRD of its own
// until the test ends, its informers resynced every resync (0: the
// default), and returns the test's harness, the operator's metrics
// registry and the counter of its writes.
func startReplicator(t *testing.T, resync time.Duration) (*replicatorHarness, *prometheus.Registry, *writeCounter) {
	t.Helper()
	crd := sharedConfigCRD(uniqueCRDGroup(t))
	deleteCRDOnCleanup(t, newCRDClient(t), crd)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	reg, counter := prometheus.NewRegistry(), &writeCounter{}
	runReplicator(t, operatorpkg.Config{Name: replicatorOperator, RESTConfig: counter.Wrap(env.Config()), Logger: log.NewNopLogger(), Registry: reg,
		ResyncPeriod: resync}, crd)
	return newReplicatorHarness(t, gvr), reg, counter
}

func newReplicatorHarness(t *testing.T, gvr schema.GroupVersionResource) *replicatorHarness {
	return &replicatorHarness{t: t, gvr: gvr, label: fmt.Sprintf("replicator-%d.example.com/env", nsCounter.Add(1)),
		kube: kubeClient(t), client: dynamicClientset(t).Resource(gvr)}
}

func (h *replicatorHarness) eventually(what string, cond wait.ConditionWithContextFunc) {
	h.t.Helper()
	if err := wait.PollUntilContextTimeout(h.t.Context(), 50*time.Millisecond, time.Minute, true, cond); err != nil {
		h.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// namespace creates a Namespace labelled value ("" for none) and returns
// its name. It is deleted when the test ends (and stays Terminating).
func (h *replicatorHarness) namespace(value string) string {
	h.t.Helper()
	name := fmt.Sprintf("replicator-%d", nsCounter.Add(1))
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if value != "" {
		n.Labels = map[string]string{h.label: value}
	}
	_, err := h.kube.CoreV1().Namespaces().Create(h.t.Context(), n, metav1.CreateOptions{})
	must(h.t, err)
	return name
}

// relabel sets the test's label of Namespace ns to value, or removes it.
func (h *replicatorHarness) relabel(ns, value string) {
	h.t.Helper()
	v := "null"
	if value != "" {
		v = `"` + value + `"`
	}
	_, err := h.kube.CoreV1().Namespaces().Patch(h.t.Context(), ns, types.MergePatchType, []byte(`{"metadata":{"labels":{"`+h.label+`":`+v+`}}}`), metav1.PatchOptions{})
	must(h.t, err)
}

// create creates the SharedConfig name, waiting for its CRD to be served.
func (h *replicatorHarness) create(name, configMap string, selector, data map[string]any) {
	h.t.Helper()
	h.eventually("SharedConfig "+name+" created", func(ctx context.Context) (bool, error) {
		_, err := h.client.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": h.gvr.GroupVersion().String(), "kind": "SharedConfig", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"namespaceSelector": selector, "configMapName": configMap, "data": data}}}, metav1.CreateOptions{})
		return err == nil, nil
	})
}

func (h *replicatorHarness) patch(name, p string) {
	h.t.Helper()
	_, err := h.client.Patch(h.t.Context(), name, types.MergePatchType, []byte(p), metav1.PatchOptions{})
	must(h.t, err)
}

func (h *replicatorHarness) ready(name string) {
	h.t.Helper()
	_, err := env.WaitReady(h.t.Context(), h.gvr, "", name)
	must(h.t, err)
}

// copies waits until each of namespaces holds the ConfigMap configMap of
// the SharedConfig owner, with data k=value (any data when value is ""),
// and until status.namespaces lists exactly them.
func (h *replicatorHarness) copies(owner, configMap, value string, namespaces ...string) {
	h.t.Helper()
	for _, ns := range namespaces {
		h.eventually(fmt.Sprintf("%s's copy in %s with %q", owner, ns, value), func(ctx context.Context) (bool, error) {
			cm, err := h.kube.CoreV1().ConfigMaps(ns).Get(ctx, configMap, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			ref := metav1.GetControllerOf(cm)
			return ref != nil && ref.Kind == "SharedConfig" && ref.Name == owner && (value == "" || cm.Data["k"] == value), nil
		})
	}
	h.statusNamespaces(owner, namespaces...)
}

// statusNamespaces waits until status.namespaces of SharedConfig name is want.
func (h *replicatorHarness) statusNamespaces(name string, want ...string) {
	h.t.Helper()
	want = slices.Sorted(slices.Values(want))
	h.eventually(name+"'s status.namespaces "+strings.Join(want, ","), func(ctx context.Context) (bool, error) {
		u, err := h.client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got, _, _ := unstructured.NestedStringSlice(u.Object, "status", "namespaces")
		return slices.Equal(got, want), nil
	})
}

// noCopy waits until none of namespaces holds the ConfigMap configMap.
func (h *replicatorHarness) noCopy(configMap string, namespaces ...string) {
	h.t.Helper()
	for _, ns := range namespaces {
		h.eventually("no "+configMap+" in "+ns, func(ctx context.Context) (bool, error) {
			_, err := h.kube.CoreV1().ConfigMaps(ns).Get(ctx, configMap, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
}

// gone waits until the SharedConfig name is deleted.
func (h *replicatorHarness) gone(name string) {
	h.t.Helper()
	h.eventually("SharedConfig "+name+" gone", func(ctx context.Context) (bool, error) {
		_, err := h.client.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// quiet checks that over a 4 s window the operator reconciles at most max
// times and writes nothing.
func (h *replicatorHarness) quiet(what string, reg *prometheus.Registry, counter *writeCounter, max float64) {
	h.t.Helper()
	reconciles := func() float64 { return metricSum(h.t, reg, "operatorkit_framework_reconciliations_total", nil) }
	before, writes := reconciles(), counter.count()
	window := time.Now().Add(4 * time.Second)
	err := wait.PollUntilContextTimeout(h.t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if n := reconciles() - before; n > max {
			return false, fmt.Errorf("%s: %v reconciliations in a steady state", what, n)
		}
		if n := counter.count() - writes; n > 0 {
			return false, fmt.Errorf("%s: %d writes in a steady state, the last %s", what, n, counter.last.Load())
		}
		return time.Now().After(window), nil
	})
	must(h.t, err)
}

// writeCounter counts the writes (but events, which client-go's
// broadcaster sends whenever it likes) of the clients built from the
// rest.Config it wraps.
type writeCounter struct {
	n    atomic.Int64
	last atomic.Value // "METHOD path" of the last write
}

func (c *writeCounter) Wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			switch req.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
			default:
				if !strings.Contains(req.URL.Path, "/events") {
					c.n.Add(1)
					c.last.Store(req.Method + " " + req.URL.Path)
				}
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

func (c *writeCounter) count() int64 { return c.n.Load() }

// conditionMessage returns the message of the condition typ of u.
func conditionMessage(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			s, _ := m["message"].(string)
			return s
		}
	}
	return ""
}
