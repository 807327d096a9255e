package crdclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// DefaultMigrationPageSize is the number of objects MigrateStorage lists
// per request when Config.MigrationPageSize is 0.
const DefaultMigrationPageSize = 500

// StorageMigration is what MigrateStorage did.
type StorageMigration struct {
	// StorageVersion is the CRD's storage version: the one every object is
	// stored in afterwards, and the only one status.storedVersions lists.
	StorageVersion string
	// StoredVersions is status.storedVersions as read before: the
	// versions objects may have been stored in.
	StoredVersions []string
	// Rewritten counts the objects written back, one write each.
	Rewritten int
	// Skipped counts the listed objects not written back: changed since
	// they were listed (409 Conflict: someone wrote them, so they are
	// stored in the storage version already) with no managedFields entry
	// of another version by then, or deleted (404).
	Skipped int
	// Refused counts the listed objects whose write the API server
	// refused as invalid or bad (a validation rule, an admission webhook
	// that gives no other code: 422 Invalid, 400 BadRequest): they stay
	// stored in their old version, the migration goes on with the others,
	// and status.storedVersions is left as it was.
	Refused int
}

// MigrateStorage makes every stored object of the CRD named crd.Name
// stored in the CRD's storage version, and then records that: it sets
// status.storedVersions to the storage version alone. A later spec can
// then drop the versions objects were stored in before (the API server
// refuses to remove a version that status.storedVersions lists), and
// reads stop converting from them.
//
// It reads the CRD from the server (crd's spec is not used: call
// EnsureCreated first, so that the storage version is the one crd
// gives). When status.storedVersions is the storage version alone it
// returns at once, having written nothing. Otherwise it waits until the
// API server's discovery says the resource is stored in the storage
// version (its storageVersionHash, where the server publishes one), lists
// the objects in every namespace, Config.MigrationPageSize at a time, and
// writes each back unchanged: an update of the object as listed, with its
// resourceVersion, which the API server encodes in the storage version. Only
// its metadata.managedFields change: an entry that names another version of
// the CRD's group names the storage version instead, its fields kept (a
// manager's update entries of an old and of the storage version become one,
// owning the fields of both, as the API server keeps one entry per manager,
// operation, subresource and version). The
// API server converts an object to the version of every entry on each
// server-side apply, so an entry naming a version the CRD no longer has
// makes every apply of the object fail ("request to convert CR to an invalid
// group/version"), the status applies of an operatorkit Framework among
// them; the entries' field paths are right as they are when the versions'
// fields have the same paths (the None conversion), while with a conversion
// webhook that moves fields an entry keeps its manager's old paths. The
// objects are handled as unstructured data, never decoded into Go types. An
// object changed since it was listed (409 Conflict) is stored in the storage
// version already: it is skipped, not retried, unless the listed object had
// an entry of another version, in which case it is read again and written
// again (at b's pace) while an entry of another version is left; one deleted
// meanwhile (404) is skipped. Objects created or written while it runs are
// stored in the storage version by the API server (on a cluster of several
// API servers, by each once its informer of CRDs has the CRD's update,
// normally within milliseconds: MigrateStorage waits for the discovery of
// the one that answers it). A list whose continue token
// expired (410) goes on with the token the API server gives for the rest
// of the objects (created or changed ones may be missed: they are in the
// storage version already) or, without one, starts again. Then it updates
// status.storedVersions through the CRD's status subresource, with the
// CRD's resourceVersion as precondition; a conflict reads the CRD again
// and retries at b's pace.
//
// Cost: one list request per page and one write per object, each an update
// event for every watcher of the resource (a running operator reconciles
// each object once more). It writes every object, so nothing calls it unless
// the operator's author asks for it: framework.Config.MigrateStorage makes
// framework.Framework.EnsureCRD (and so operator.Operator.Run) call it
// after EnsureCreated, except in a dry run; or call it yourself after
// EnsureCreated. It is idempotent, and safe to run from several processes
// at once (each object is written by one of them, the others get a
// conflict and read it again only while it has an entry of another
// version), but each run that finds old versions in
// status.storedVersions writes every object. Its identity needs get of
// the CRD and discovery; and, when there is something to migrate, list
// and update of the resource in every namespace and update of
// customresourcedefinitions/status.
//
// b paces the retries of transient failures (timeouts, 429, 5xx, refused or
// reset connections) and the waits; it is Reset before each step (reading
// the CRD, the wait for discovery, each page, each object's write, the
// status update), so that it bounds the retries of one step, not the whole
// migration; nil means NewDefaultBackOff. Give each concurrent call a
// BackOff of its own.
// MigrateStorage returns what it did (also on error: the objects written
// so far), and:
//   - nil once status.storedVersions is the storage version alone;
//   - an error wrapping ErrInvalidArgument for a nil crd, an empty name or
//     a b that holds a nil pointer, and ErrInvalidConfig when
//     Config.Dynamic was not set: nothing is sent to the API server then;
//   - an error wrapping ErrStorageVersionChanged when the CRD's storage
//     version changed while it ran, or status.storedVersions gained
//     another version: status.storedVersions is left as it is then; call
//     MigrateStorage again;
//   - an error wrapping ErrTimeout when b gives up on a step, or
//     context.Cause(ctx) when ctx ends, saying what was last seen;
//     status.storedVersions is left as it is, and the objects written
//     so far stay written;
//   - objects whose write the API server refused as invalid or bad (422,
//     400: a validation rule they no longer pass, an admission webhook's
//     denial, which is 400 unless the webhook gives another code) do not
//     stop the migration: the others are written, and then an error names
//     the CRD once and the first ten of them (object, version, the
//     server's reason), wrapping their API errors; they are counted in
//     StorageMigration.Refused, stay stored in their old version, and
//     status.storedVersions is left as it is. Fix or delete them and call
//     MigrateStorage again;
//   - any other API error, wrapped, at once: the CRD not found, the list
//     or an object's write refused otherwise (403: the identity may not
//     update the resource, or an admission webhook denied it with that
//     code; the error names the CRD, the object and the version).
//     status.storedVersions is left as it is.
func (c *CRDClient) MigrateStorage(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, b backoff.BackOff) (StorageMigration, error) {
	if err := validate(crd, b); err != nil {
		return StorageMigration{}, err
	}
	if c.dynamic == nil {
		return StorageMigration{}, fmt.Errorf("%w: crdclient.Config.Dynamic must not be empty for MigrateStorage (of CRD %s)", ErrInvalidConfig, crd.Name)
	}
	if b == nil {
		b = NewDefaultBackOff()
	}
	what := "migrate storage of CRD " + crd.Name
	logger := log.With(c.logger, "crd", crd.Name)

	var current *apiextensionsv1.CustomResourceDefinition
	if err := step(ctx, b, what, func(ctx context.Context) (err error) {
		current, err = c.get(ctx, crd.Name)
		return err
	}); err != nil {
		return StorageMigration{}, err
	}
	storage := storageVersion(current)
	m := StorageMigration{StorageVersion: storage, StoredVersions: slices.Clone(current.Status.StoredVersions)}
	if slices.Equal(m.StoredVersions, []string{storage}) {
		level.Debug(logger).Log("msg", "objects are stored in the storage version only", "storageVersion", storage)
		return m, nil
	}
	gvr, err := migrationResource(current)
	if err != nil {
		return m, fmt.Errorf("%s: %w", what, err)
	}
	start := time.Now()
	level.Info(logger).Log("msg", "migrating stored objects to the storage version", "storageVersion", storage, "storedVersions", strings.Join(m.StoredVersions, ","))
	if err := step(ctx, b, what, func(ctx context.Context) error {
		return c.storedAs(ctx, current, gvr)
	}); err != nil {
		return m, err
	}
	if err := c.rewriteAll(ctx, logger, b, what, gvr, &m); err != nil {
		return m, err
	}
	if err := step(ctx, b, what, func(ctx context.Context) error {
		return c.setStoredVersions(ctx, crd.Name, &m)
	}); err != nil {
		return m, err
	}
	level.Info(logger).Log("msg", "migrated stored objects to the storage version", "storageVersion", storage,
		"rewritten", m.Rewritten, "skipped", m.Skipped, "duration", time.Since(start))
	return m, nil
}

// get reads the CRD named name; a transient failure is pending.
func (c *CRDClient) get(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd, err := c.crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, classify("get CRD "+name, err)
	}
	return crd, nil
}

// storageVersion returns the name of crd's storage version.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// migrationResource returns the resource the objects of crd are read and
// written through: the storage version's, or, when that is not served, the
// first served version's (the API server converts what it writes to the
// storage version either way).
func migrationResource(crd *apiextensionsv1.CustomResourceDefinition) (schema.GroupVersionResource, error) {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	if version == "" {
		return schema.GroupVersionResource{}, fmt.Errorf("no version of CRD %s is served", crd.Name)
	}
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}, nil
}

// storedAs returns a pending error until the API server's discovery says
// that the objects of crd's resource gvr are stored in crd's storage
// version: the storage version hash it publishes for them is the one of
// that version. A server that publishes none is taken at its word. The
// API server's handler of the resource and its discovery follow the same
// informer of CRDs, so a storage version just set by an update of the CRD
// is used once discovery says so.
func (c *CRDClient) storedAs(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, gvr schema.GroupVersionResource) error {
	gv := gvr.GroupVersion().String()
	list, err := c.resourcesOf(ctx, gv)
	if err != nil {
		return err
	}
	want := storageVersionHash(crd.Spec.Group, storageVersion(crd), crd.Spec.Names.Kind)
	for _, r := range list.APIResources {
		if r.Name != gvr.Resource {
			continue
		}
		if r.StorageVersionHash != "" && r.StorageVersionHash != want {
			return pending(fmt.Sprintf("discovery of %s says %s are stored in another version than %s yet", gv, gvr.Resource, storageVersion(crd)))
		}
		return nil
	}
	return pending(fmt.Sprintf("resource %s not in discovery of %s yet", gvr.Resource, gv))
}

// storageVersionHash is the hash the API server's discovery publishes for
// a resource whose objects of kind in group are stored in version: the
// first 8 bytes of the SHA-256 of "group/version/kind", in base64 (as
// StorageVersionHash of k8s.io/apiserver/pkg/endpoints/discovery computes
// it).
func storageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// rewriteAll lists the objects of gvr a page at a time and writes each
// back, counting them in m.
func (c *CRDClient) rewriteAll(ctx context.Context, logger log.Logger, b backoff.BackOff, what string, gvr schema.GroupVersionResource, m *StorageMigration) error {
	resource := c.dynamic.Resource(gvr)
	cont := ""
	var refused []error
	for {
		var list *unstructured.UnstructuredList
		if err := step(ctx, b, what, func(ctx context.Context) error {
			l, err := resource.List(ctx, metav1.ListOptions{Limit: c.pageSize, Continue: cont})
			var status apierrors.APIStatus
			switch {
			case err == nil:
				list = l
				return nil
			case cont != "" && apierrors.IsResourceExpired(err):
				// The snapshot the pages are read from is gone (etcd
				// compacted it). The rest of the objects, as they are now,
				// do as well: any that changed since are stored in the
				// storage version already.
				cont = ""
				if errors.As(err, &status) {
					cont = status.Status().Continue
				}
				level.Debug(logger).Log("msg", "list continue token expired", "restart", cont == "")
				return pending(fmt.Sprintf("list %s: %v", gvr, err))
			}
			return classify(fmt.Sprintf("list %s", gvr), err)
		}); err != nil {
			return err
		}
		for i := range list.Items {
			err := c.rewrite(ctx, b, what, resource, &list.Items[i], m)
			switch {
			case err == nil:
			case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
				// This object's own fault: the others may go through,
				// and all of them are named at the end, not one a run.
				m.Refused++
				if len(refused) < maxRefusedNamed {
					// Without the "migrate storage of CRD" of step,
					// which the error says once for all of them.
					if inner := errors.Unwrap(err); inner != nil {
						err = inner
					}
					refused = append(refused, err)
				}
			default:
				return err
			}
		}
		level.Debug(logger).Log("msg", "migrated a page of objects", "objects", len(list.Items), "rewritten", m.Rewritten, "skipped", m.Skipped, "refused", m.Refused)
		cont = list.GetContinue()
		if cont == "" {
			break
		}
	}
	if m.Refused > 0 {
		objects, stay := fmt.Sprintf("%d objects", m.Refused), "they stay stored in their"
		if m.Refused == 1 {
			objects, stay = "1 object", "it stays stored in its"
		}
		if m.Refused > len(refused) {
			objects += fmt.Sprintf(" (the first %d named)", len(refused))
		}
		return fmt.Errorf("%s: the API server refused the rewrite of %s; %s old version, and status.storedVersions is left as it is: %w",
			what, objects, stay, errors.Join(refused...))
	}
	return nil
}

// maxRefusedNamed is how many objects refused their rewrite the error of
// MigrateStorage names.
const maxRefusedNamed = 10

// rewrite writes obj back as it was listed, with its resourceVersion, and
// with its managedFields entries of other versions than m.StorageVersion
// moved to that version (see retarget).
func (c *CRDClient) rewrite(ctx context.Context, b backoff.BackOff, what string, resource dynamic.NamespaceableResourceInterface, obj *unstructured.Unstructured, m *StorageMigration) error {
	name, client := obj.GetName(), dynamic.ResourceInterface(resource)
	if ns := obj.GetNamespace(); ns != "" {
		name, client = ns+"/"+name, resource.Namespace(ns)
	}
	return step(ctx, b, what, func(ctx context.Context) error {
		stale := retarget(obj, m.StorageVersion)
		_, err := client.Update(ctx, obj, metav1.UpdateOptions{})
		switch {
		case err == nil:
			m.Rewritten++
			return nil
		case apierrors.IsNotFound(err):
			m.Skipped++ // gone
			return nil
		case apierrors.IsConflict(err) && !stale:
			// Written since it was listed, so stored in the storage
			// version already.
			m.Skipped++
			return nil
		case apierrors.IsConflict(err):
			// Stored in the storage version already, but its
			// managedFields may still name an old version: read it again.
			current, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				m.Skipped++
				return nil
			case err != nil:
				return classify(fmt.Sprintf("read %s %s again", obj.GetKind(), name), err)
			}
			if !retarget(current.DeepCopy(), m.StorageVersion) {
				m.Skipped++
				return nil
			}
			*obj = *current
			return pending(fmt.Sprintf("%s %s changed since it was listed, its managedFields still name an old version", obj.GetKind(), name))
		}
		return classify(fmt.Sprintf("rewrite %s %s (resourceVersion %s) in version %s", obj.GetKind(), name, obj.GetResourceVersion(), obj.GetAPIVersion()), err)
	})
}

// retarget sets the apiVersion of obj's managedFields entries that name
// another version of obj's group than storage to that group's storage
// version, and reports whether there was one. The API server converts an
// object to the version of each entry on every server-side apply, and fails
// the apply once that version is no longer in the CRD ("request to convert
// CR to an invalid group/version"): an entry left naming a version the next
// release drops would refuse every apply of the object. The entries' field paths are
// kept: exact when the versions' fields have the same paths (the None
// conversion); with a conversion webhook that moves fields, an entry keeps
// its manager's old paths. Entries that then have the same manager,
// operation, subresource and version (one manager's updates through the
// old and the new version) are made one (see merge).
func retarget(obj *unstructured.Unstructured, storage string) bool {
	entries := obj.GetManagedFields()
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil || len(entries) == 0 {
		return false
	}
	want := schema.GroupVersion{Group: gv.Group, Version: storage}.String()
	stale := false
	for i := range entries {
		if v, err := schema.ParseGroupVersion(entries[i].APIVersion); err == nil && v.Group == gv.Group && entries[i].APIVersion != want {
			entries[i].APIVersion = want
			stale = true
		}
	}
	if stale {
		obj.SetManagedFields(merge(entries))
	}
	return stale
}

// merge returns entries with those the API server takes for the same
// manager's made one, which owns the fields of each, at the latest time
// of theirs. The API server tells entries apart by manager, operation and
// subresource, and an update's also by version; of entries it takes for
// the same it keeps only one, and the fields of the others would lose
// their owner. Entries whose fields cannot be read are kept as they are.
func merge(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	type id struct{ manager, operation, subresource, version string }
	key := func(e metav1.ManagedFieldsEntry) id {
		k := id{e.Manager, string(e.Operation), e.Subresource, e.APIVersion}
		if e.Operation == metav1.ManagedFieldsOperationApply {
			k.version = "" // one entry per applier, whatever its version
		}
		return k
	}
	first := map[id]int{}
	out := make([]metav1.ManagedFieldsEntry, 0, len(entries))
	for _, e := range entries {
		i, ok := first[key(e)]
		if !ok {
			first[key(e)] = len(out)
			out = append(out, e)
			continue
		}
		fields, err := unionFields(out[i].FieldsV1, e.FieldsV1)
		if err != nil {
			out = append(out, e)
			continue
		}
		out[i].FieldsV1 = fields
		if e.Time != nil && (out[i].Time == nil || out[i].Time.Before(e.Time)) {
			out[i].Time = e.Time
		}
	}
	return out
}

// unionFields returns the fields of a and of b, as managedFields hold
// them (FieldsV1; nil holds none).
func unionFields(a, b *metav1.FieldsV1) (*metav1.FieldsV1, error) {
	union := fieldpath.NewSet()
	for _, f := range []*metav1.FieldsV1{a, b} {
		if f == nil || len(f.Raw) == 0 {
			continue
		}
		set := fieldpath.NewSet()
		if err := set.FromJSON(bytes.NewReader(f.Raw)); err != nil {
			return nil, err
		}
		union = union.Union(set)
	}
	raw, err := union.ToJSON()
	if err != nil {
		return nil, err
	}
	return &metav1.FieldsV1{Raw: raw}, nil
}

// setStoredVersions sets the status.storedVersions of the CRD named name
// to m.StorageVersion alone, unless the CRD changed in a way that makes
// the migration incomplete (ErrStorageVersionChanged).
func (c *CRDClient) setStoredVersions(ctx context.Context, name string, m *StorageMigration) error {
	current, err := c.get(ctx, name)
	if err != nil {
		return err
	}
	if v := storageVersion(current); v != m.StorageVersion {
		return fmt.Errorf("%w: from %s to %s while the objects were rewritten", ErrStorageVersionChanged, m.StorageVersion, v)
	}
	for _, v := range current.Status.StoredVersions {
		if v != m.StorageVersion && !slices.Contains(m.StoredVersions, v) {
			return fmt.Errorf("%w: status.storedVersions gained %s while the objects were rewritten", ErrStorageVersionChanged, v)
		}
	}
	want := []string{m.StorageVersion}
	if slices.Equal(current.Status.StoredVersions, want) {
		return nil // someone else finished first
	}
	next := current.DeepCopy()
	next.Status.StoredVersions = want
	_, err = c.crds.UpdateStatus(ctx, next, metav1.UpdateOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err):
		return pending(fmt.Sprintf("CRD %s changed while setting status.storedVersions: %v", name, err))
	}
	return classify(fmt.Sprintf("set status.storedVersions of CRD %s to %v", name, want), err)
}

// step runs op with poll after resetting b, so that b bounds the retries
// of one step; an error op returns is prefixed with what.
func step(ctx context.Context, b backoff.BackOff, what string, op func(context.Context) error) error {
	b.Reset()
	return poll(ctx, b, what, func(ctx context.Context) error {
		err := op(ctx)
		var p *pendingError
		if err == nil || errors.As(err, &p) {
			return err
		}
		return fmt.Errorf("%s: %w", what, err)
	})
}
