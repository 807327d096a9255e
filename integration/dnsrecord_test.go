package integration

// The operator of the TestDNSRecord* tests, written from the docs alone
// (README.md, docs/getting-started.md, godoc): an operator of a shape none
// of the others has, a "provider controller". A DNSRecord asks for a record
// at a DNS provider outside the cluster, reached over HTTP: the one crud
// resource creates it (under a conditioncontext.Guard, so that a stale
// cache or a second replica never creates it twice), keeps its ID in the
// DNSRecord's status, says Ready False while the provider has it pending
// (and looks again with requeuecontext), puts back what someone changed or
// deleted at the provider, honours the provider's Retry-After (retry.After),
// and deletes it before the DNSRecord goes.
//
// The operator's code is everything from here to the line "end of the
// operator"; the fake provider and the tests follow it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
)

const (
	dnsOperator = "dnsrecord-operator"
	// recordCreated is the condition of the Guard around the create at the
	// provider.
	recordCreated = "RecordCreated"
)

// DNSRecord asks for a record at the DNS provider.
type DNSRecord struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              DNSRecordSpec   `json:"spec"`
	Status            DNSRecordStatus `json:"status,omitempty"`
}

// DNSRecordSpec is the record: its zone, name, type, value and TTL.
type DNSRecordSpec struct {
	Zone  string `json:"zone"`
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
	TTL   int64  `json:"ttl,omitempty"`
}

// DNSRecordStatus holds the conditions (the Framework's, and RecordCreated)
// and the record's ID at the provider.
type DNSRecordStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	RecordID           string             `json:"recordID,omitempty"`
}

// DeepCopyObject is what controller-gen would write.
func (r *DNSRecord) DeepCopyObject() runtime.Object {
	c := *r
	r.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Status.Conditions = slices.Clone(r.Status.Conditions)
	return &c
}

// dnsRecordCRD is the DNSRecord CRD in group, as controller-gen writes it:
// a status subresource, the conditions a map list, status.recordID.
func dnsRecordCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	crd := backupCRD(group)
	crd.Name = "dnsrecords." + group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "dnsrecords", Kind: "DNSRecord"}
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
	props["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"zone", "name", "type", "value"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"zone": str, "name": str, "type": str, "value": str, "ttl": {Type: "integer"}}}
	props["status"].Properties["recordID"] = str
	return crd
}

// providerRecord is a record as the provider's API has it.
type providerRecord struct {
	ID    string `json:"id,omitempty"`
	Zone  string `json:"zone"`
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
	TTL   int64  `json:"ttl"`
	Owner string `json:"owner"`           // a free-text comment: who made it
	State string `json:"state,omitempty"` // "pending", then "active"
}

// providerError is an answer of the provider other than 2xx.
type providerError struct {
	code int
	msg  string
}

func (e *providerError) Error() string { return fmt.Sprintf("provider: %d %s", e.code, e.msg) }

func isProviderStatus(err error, code int) bool {
	var pe *providerError
	return errors.As(err, &pe) && pe.code == code
}

// dnsClient is the provider's API client (a provider's SDK would be one).
type dnsClient struct{ url string }

func (c *dnsClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, body)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		e := &providerError{code: resp.StatusCode, msg: strings.TrimSpace(string(msg))}
		// Not retried before its Retry-After (none when absent), and a
		// 429 is Ready's reason.
		s, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode == http.StatusTooManyRequests {
			return conditioncontext.WithReason(retry.After(e, time.Duration(s)*time.Second), "ProviderRateLimited")
		}
		return retry.After(e, time.Duration(s)*time.Second)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func recordsPath(zone string) string    { return "/zones/" + url.PathEscape(zone) + "/records" }
func recordPath(zone, id string) string { return recordsPath(zone) + "/" + url.PathEscape(id) }

// recordOwner is what the operator writes in a record's comment, to find
// it again when the answer to its create was lost.
func recordOwner(r *DNSRecord) string { return r.Namespace + "/" + r.Name + "/" + string(r.UID) }

// recordOps is the crud.Ops of a DNSRecord's record at the provider.
type recordOps struct {
	api     *dnsClient
	records dynamic.NamespaceableResourceInterface // to write status.recordID
	poll    time.Duration                          // how often to look again while the record is pending
}

// recordUpdate is an update change: the record, and what to do.
type recordUpdate struct {
	rec   *providerRecord
	fix   bool // put back the value and TTL
	adopt bool // found at the provider, not in status yet
}

func (o *recordOps) Name() string { return "dnsrecord" }

func (o *recordOps) GetCurrentState(ctx context.Context, obj any) (any, error) {
	r := obj.(*DNSRecord)
	if r.Status.RecordID != "" {
		rec := &providerRecord{}
		err := o.api.do(ctx, http.MethodGet, recordPath(r.Spec.Zone, r.Status.RecordID), nil, rec)
		if err == nil {
			return rec, nil
		}
		if !isProviderStatus(err, http.StatusNotFound) {
			return nil, err
		}
	}
	// No record known: unless a create's outcome is unknown (a Guard's lock
	// left behind, a create whose answer was lost), there is none.
	if c, ok := conditioncontext.Get(ctx, recordCreated); !ok || c.Status != metav1.ConditionUnknown {
		return nil, nil
	}
	var recs []providerRecord
	q := url.Values{"name": {r.Spec.Name}, "type": {r.Spec.Type}}
	if err := o.api.do(ctx, http.MethodGet, recordsPath(r.Spec.Zone)+"?"+q.Encode(), nil, &recs); err != nil {
		return nil, err
	}
	for i := range recs {
		if recs[i].Owner == recordOwner(r) {
			return &recs[i], nil
		}
	}
	return nil, nil
}

func (o *recordOps) GetDesiredState(_ context.Context, obj any) (any, error) {
	r := obj.(*DNSRecord)
	return &providerRecord{Zone: r.Spec.Zone, Name: r.Spec.Name, Type: r.Spec.Type, Value: r.Spec.Value, TTL: r.Spec.TTL, Owner: recordOwner(r)}, nil
}

func (o *recordOps) NewUpdatePatch(ctx context.Context, obj, current, desired any) (*crud.Patch, error) {
	r, want := obj.(*DNSRecord), desired.(*providerRecord)
	p := crud.NewPatch()
	cur, _ := current.(*providerRecord)
	if cur == nil {
		p.SetCreateChange(want)
		return p, nil
	}
	o.pending(ctx, cur)
	u := &recordUpdate{rec: want, fix: cur.Value != want.Value || cur.TTL != want.TTL, adopt: cur.ID != r.Status.RecordID}
	u.rec.ID = cur.ID
	if u.fix || u.adopt {
		p.SetUpdateChange(u)
	}
	return p, nil
}

func (o *recordOps) NewDeletePatch(_ context.Context, _, current, _ any) (*crud.Patch, error) {
	p := crud.NewPatch()
	if cur, _ := current.(*providerRecord); cur != nil {
		p.SetDeleteChange(cur)
	}
	return p, nil
}

func (o *recordOps) ApplyCreateChange(ctx context.Context, obj, change any) error {
	r, want := obj.(*DNSRecord), change.(*providerRecord)
	reason := "Creating"
	if r.Status.RecordID != "" {
		reason = "Recreating" // deleted at the provider
	}
	return conditioncontext.Guard(ctx, recordCreated, reason, func(ctx context.Context) (metav1.ConditionStatus, string, string, error) {
		rec := &providerRecord{}
		if err := o.api.do(ctx, http.MethodPost, recordsPath(want.Zone), want, rec); err != nil {
			var pe *providerError
			if errors.As(err, &pe) && pe.code >= 400 && pe.code < 500 {
				return metav1.ConditionFalse, "", "", err // refused: nothing was created
			}
			return "", "", "", err // Unknown: it may have been created
		}
		if err := o.setRecordID(ctx, r, rec.ID); err != nil {
			return "", "", "", err // Unknown: the next reconciliation finds it by its owner
		}
		o.pending(ctx, rec)
		return metav1.ConditionTrue, "Created", "record " + rec.ID, nil
	})
}

func (o *recordOps) ApplyUpdateChange(ctx context.Context, obj, change any) error {
	r, u := obj.(*DNSRecord), change.(*recordUpdate)
	if u.fix {
		if err := o.api.do(ctx, http.MethodPut, recordPath(u.rec.Zone, u.rec.ID), u.rec, nil); err != nil {
			return err
		}
	}
	if u.adopt {
		if err := o.setRecordID(ctx, r, u.rec.ID); err != nil {
			return err
		}
		conditioncontext.Set(ctx, recordCreated, metav1.ConditionTrue, "Adopted", "record "+u.rec.ID)
	}
	return nil
}

func (o *recordOps) ApplyDeleteChange(ctx context.Context, _, change any) error {
	rec := change.(*providerRecord)
	err := o.api.do(ctx, http.MethodDelete, recordPath(rec.Zone, rec.ID), nil, nil)
	if isProviderStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// setRecordID writes status.recordID of r, and tells the Framework the
// resourceVersion of the write (resourceversioncontext).
func (o *recordOps) setRecordID(ctx context.Context, r *DNSRecord, id string) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"recordID": id}})
	if err != nil {
		return err
	}
	u, err := o.records.Namespace(r.Namespace).Patch(ctx, r.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: dnsOperator}, "status")
	if err != nil {
		return err
	}
	resourceversioncontext.SetResourceVersion(ctx, u.GetResourceVersion())
	return nil
}

// pending says, while the provider has rec pending, that the DNSRecord is
// not Ready yet, and asks to look again after o.poll.
func (o *recordOps) pending(ctx context.Context, rec *providerRecord) {
	if rec.State == "active" {
		return
	}
	conditioncontext.Set(ctx, conditioncontext.Reconciling, metav1.ConditionTrue, "RecordPending", "record "+rec.ID+" is "+rec.State+" at the provider")
	requeuecontext.SetRequeueAfter(ctx, o.poll)
}

// dnsOptions are what the tests vary: the informer's resync period, how
// often to look at a pending record, the reconcile timeout.
type dnsOptions struct {
	resync, poll, timeout time.Duration
}

// newDNSOperator builds the DNSRecord operator for the DNSRecords of ns,
// talking to the provider at providerURL.
func newDNSOperator(crd *apiextensionsv1.CustomResourceDefinition, ns, providerURL string, o dnsOptions) (*operatorpkg.Operator, error) {
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	op, err := operatorpkg.New(operatorpkg.Config{Name: dnsOperator, RESTConfig: env.Config(), Logger: log.NewNopLogger()})
	if err != nil {
		return nil, err
	}
	records, err := op.Informer(informer.Config{GVR: gvr, ObjectType: &DNSRecord{}, Namespace: ns, ResyncPeriod: o.resync})
	if err != nil {
		return nil, err
	}
	res, err := crud.New(crud.Config{Ops: &recordOps{api: &dnsClient{url: providerURL}, records: op.Dynamic().Resource(gvr), poll: o.poll}})
	if err != nil {
		return nil, err
	}
	retried, err := retry.New(retry.Config{Resource: res})
	if err != nil {
		return nil, err
	}
	rtr, err := router.Single("v1", retried)
	if err != nil {
		return nil, err
	}
	_, err = op.NewFramework(framework.Config{Name: dnsOperator, Informer: records, ResourceRouter: rtr, Resource: gvr,
		Conditions: true, CRD: crd, ReconcileTimeout: o.timeout})
	return op, err
}

// end of the operator

// fakeDNS is a DNS provider's HTTP API: records are pending for pendingFor
// after their create, then active. Faults make it fail; calls counts the
// calls by operation ("create", "get", "list", "update", "delete").
type fakeDNS struct {
	*httptest.Server
	pendingFor time.Duration

	mu      sync.Mutex
	records map[string]*providerRecord
	created map[string]time.Time
	next    int
	calls   map[string]int
	faults  map[string]*dnsFault
}

// dnsFault makes the next times calls of an operation fail (times < 0:
// until cleared): answer code (with Retry-After retryAfter seconds when
// set), after delay; with afterCommit the operation happens first.
type dnsFault struct {
	code        int
	retryAfter  int
	delay       time.Duration
	afterCommit bool
	times       int
}

func newFakeDNS(t *testing.T, pendingFor time.Duration) *fakeDNS {
	d := &fakeDNS{pendingFor: pendingFor, records: map[string]*providerRecord{}, created: map[string]time.Time{},
		calls: map[string]int{}, faults: map[string]*dnsFault{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /zones/{zone}/records", func(w http.ResponseWriter, r *http.Request) {
		d.serve(w, r, "create", func() (int, any) {
			var rec providerRecord
			if err := json.NewDecoder(r.Body).Decode(&rec); err != nil {
				return http.StatusBadRequest, err.Error()
			}
			d.next++
			rec.ID, rec.Zone = fmt.Sprintf("rec-%d", d.next), r.PathValue("zone")
			d.records[rec.ID], d.created[rec.ID] = &rec, time.Now()
			return http.StatusCreated, d.view(rec.ID)
		})
	})
	mux.HandleFunc("GET /zones/{zone}/records", func(w http.ResponseWriter, r *http.Request) {
		d.serve(w, r, "list", func() (int, any) {
			out := []providerRecord{}
			for id, rec := range d.records {
				if rec.Zone == r.PathValue("zone") && rec.Name == r.URL.Query().Get("name") && rec.Type == r.URL.Query().Get("type") {
					out = append(out, *d.view(id))
				}
			}
			return http.StatusOK, out
		})
	})
	mux.HandleFunc("GET /zones/{zone}/records/{id}", func(w http.ResponseWriter, r *http.Request) {
		d.serve(w, r, "get", func() (int, any) {
			if d.records[r.PathValue("id")] == nil {
				return http.StatusNotFound, "no such record"
			}
			return http.StatusOK, d.view(r.PathValue("id"))
		})
	})
	mux.HandleFunc("PUT /zones/{zone}/records/{id}", func(w http.ResponseWriter, r *http.Request) {
		d.serve(w, r, "update", func() (int, any) {
			rec := d.records[r.PathValue("id")]
			var in providerRecord
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				return http.StatusBadRequest, err.Error()
			}
			if rec == nil {
				return http.StatusNotFound, "no such record"
			}
			rec.Value, rec.TTL = in.Value, in.TTL
			return http.StatusOK, d.view(rec.ID)
		})
	})
	mux.HandleFunc("DELETE /zones/{zone}/records/{id}", func(w http.ResponseWriter, r *http.Request) {
		d.serve(w, r, "delete", func() (int, any) {
			if d.records[r.PathValue("id")] == nil {
				return http.StatusNotFound, "no such record"
			}
			delete(d.records, r.PathValue("id"))
			return http.StatusNoContent, nil
		})
	})
	d.Server = httptest.NewServer(mux)
	t.Cleanup(d.Close)
	return d
}

// view returns a copy of record id with its state; d.mu is held.
func (d *fakeDNS) view(id string) *providerRecord {
	rec := *d.records[id]
	rec.State = "active"
	if time.Since(d.created[id]) < d.pendingFor {
		rec.State = "pending"
	}
	return &rec
}

// serve counts the call of op, applies op's fault, and answers with what
// do returns.
func (d *fakeDNS) serve(w http.ResponseWriter, r *http.Request, op string, do func() (int, any)) {
	d.mu.Lock()
	d.calls[op]++
	var f dnsFault
	if p := d.faults[op]; p != nil && p.times != 0 {
		f = *p
		p.times--
	}
	code, body := 0, any(nil)
	if f.code == 0 || f.afterCommit {
		code, body = do()
	}
	d.mu.Unlock()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	if f.code != 0 {
		if f.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(f.retryAfter))
		}
		code, body = f.code, http.StatusText(f.code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if body != nil {
		_ = json.NewEncoder(w).Encode(body)
	}
}

func (d *fakeDNS) setFault(op string, f *dnsFault) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults[op] = f
}

func (d *fakeDNS) callsOf(op string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[op]
}

// recordsOf returns the records whose owner comment begins with prefix
// ("<namespace>/<name>/"), sorted by ID.
func (d *fakeDNS) recordsOf(prefix string) []providerRecord {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []providerRecord
	for id, rec := range d.records {
		if strings.HasPrefix(rec.Owner, prefix) {
			out = append(out, *d.view(id))
		}
	}
	slices.SortFunc(out, func(a, b providerRecord) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// edit changes a record as someone at the provider would: f changes it, or
// f == nil deletes it. It is not counted as a call.
func (d *fakeDNS) edit(id string, f func(*providerRecord)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f == nil {
		delete(d.records, id)
		return
	}
	f(d.records[id])
}

// dnsFixture is one test's CRD, namespace, provider and clients.
type dnsFixture struct {
	t        *testing.T
	ns       string
	crd      *apiextensionsv1.CustomResourceDefinition
	gvr      schema.GroupVersionResource
	provider *fakeDNS
	client   dynamic.ResourceInterface
}

func newDNSFixture(t *testing.T, pendingFor time.Duration) *dnsFixture {
	t.Helper()
	crd := dnsRecordCRD(uniqueCRDGroup(t))
	deleteCRDOnCleanup(t, newCRDClient(t), crd)
	ns := newNamespace(t)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	x := &dnsFixture{t: t, ns: ns, crd: crd, gvr: gvr, provider: newFakeDNS(t, pendingFor),
		client: dynamicClientset(t).Resource(gvr).Namespace(ns)}
	// Once the operators stopped (cleanups run last first), the DNSRecords
	// left lose their finalizer, so that the CRD's delete does not wait.
	t.Cleanup(func() {
		list, err := x.client.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Errorf("cleanup: list DNSRecords: %v", err)
			return
		}
		for _, r := range list.Items {
			_, err := x.client.Patch(context.Background(), r.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: remove the finalizer of %s: %v", r.GetName(), err)
			}
		}
	})
	return x
}

// start runs a replica of the operator until the test ends; the function
// it returns stops it earlier.
func (x *dnsFixture) start(o dnsOptions) (stop func()) {
	x.t.Helper()
	op, err := newDNSOperator(x.crd, x.ns, x.provider.URL, o)
	must(x.t, err)
	stopOp, _ := runOperator(op)
	var once sync.Once
	stop = func() { once.Do(func() { must(x.t, stopOp()) }) }
	x.t.Cleanup(stop)
	return stop
}

// create creates the DNSRecord name (once its CRD is served).
func (x *dnsFixture) create(name, value string) {
	x.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": x.gvr.GroupVersion().String(), "kind": "DNSRecord", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"zone": "example.com", "name": name, "type": "A", "value": value, "ttl": int64(300)}}}
	poll(x.t, "create DNSRecord "+name, func(ctx context.Context) (bool, error) {
		_, err := x.client.Create(ctx, obj, metav1.CreateOptions{})
		return err == nil, nil
	})
}

// get reads the DNSRecord name, typed.
func (x *dnsFixture) get(ctx context.Context, name string) (*DNSRecord, error) {
	u, err := x.client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	r := &DNSRecord{}
	return r, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r)
}

// waitFor polls until cond holds for the DNSRecord name, and returns it.
func (x *dnsFixture) waitFor(name, what string, cond func(*DNSRecord) bool) *DNSRecord {
	x.t.Helper()
	var last *DNSRecord
	poll(x.t, name+": "+what, func(ctx context.Context) (bool, error) {
		r, err := x.get(ctx, name)
		if err != nil {
			return false, nil
		}
		last = r
		return cond(r), nil
	})
	return last
}

// ready waits until name is Ready at its generation, with its one record
// at the provider active, holding value, and named in status.recordID; it
// returns that record.
func (x *dnsFixture) ready(name, value string) providerRecord {
	x.t.Helper()
	_, err := env.WaitReady(x.t.Context(), x.gvr, x.ns, name)
	must(x.t, err)
	var rec providerRecord
	x.waitFor(name, "its one record active with "+value+" and in status", func(r *DNSRecord) bool {
		recs := x.provider.recordsOf(x.ns + "/" + name + "/")
		if len(recs) != 1 {
			return false
		}
		rec = recs[0]
		return rec.State == "active" && rec.Value == value && r.Status.RecordID == rec.ID && isCondition(r, conditioncontext.Ready, metav1.ConditionTrue, "")
	})
	return rec
}

func condition(r *DNSRecord, typ string) (metav1.Condition, bool) {
	i := slices.IndexFunc(r.Status.Conditions, func(c metav1.Condition) bool { return c.Type == typ })
	if i < 0 {
		return metav1.Condition{}, false
	}
	return r.Status.Conditions[i], true
}

// isCondition reports whether r has condition typ with status (and reason,
// unless empty) at its generation.
func isCondition(r *DNSRecord, typ string, status metav1.ConditionStatus, reason string) bool {
	c, ok := condition(r, typ)
	return ok && c.Status == status && (reason == "" || c.Reason == reason) && c.ObservedGeneration == r.Generation
}

// countOver polls for window and returns how many calls of op the provider
// got meanwhile; each poll checks hold, which fails the test when it
// returns an error.
func (x *dnsFixture) countOver(op string, window time.Duration, hold func(ctx context.Context) error) int {
	x.t.Helper()
	before, start := x.provider.callsOf(op), time.Now()
	poll(x.t, fmt.Sprintf("a window of %s", window), func(ctx context.Context) (bool, error) {
		if hold != nil {
			if err := hold(ctx); err != nil {
				return false, err
			}
		}
		return time.Since(start) >= window, nil
	})
	return x.provider.callsOf(op) - before
}

// TestDNSRecordOperator: a DNSRecord gets one record at the provider, is
// Ready False (RecordPending) while the provider has it pending, polled
// without a hot loop, then Ready; a new value goes to the provider; a value
// changed or a record deleted at the provider is put back at the next
// resync; deleting the DNSRecord deletes its record.
func TestDNSRecordOperator(t *testing.T) {
	t.Parallel()
	x := newDNSFixture(t, 2*time.Second)
	every := 300 * time.Millisecond
	x.start(dnsOptions{resync: time.Second, poll: every})
	start := time.Now()
	x.create("www", "192.0.2.1")

	r := x.waitFor("www", "Ready False, RecordPending, with its record ID", func(r *DNSRecord) bool {
		return r.Status.RecordID != "" && isCondition(r, conditioncontext.Ready, metav1.ConditionFalse, "RecordPending") &&
			isCondition(r, conditioncontext.Reconciling, metav1.ConditionTrue, "RecordPending")
	})
	if c, _ := condition(r, recordCreated); c.Status != metav1.ConditionTrue || c.Reason != "Created" || c.Message != "record "+r.Status.RecordID {
		t.Errorf("RecordCreated = %+v, want True, Created, naming %s", c, r.Status.RecordID)
	}
	rec := x.ready("www", "192.0.2.1")
	elapsed := time.Since(start)
	if rec.ID != r.Status.RecordID || rec.TTL != 300 {
		t.Errorf("record %+v, want the one created first, with TTL 300", rec)
	}
	// Pending for 2 s: a look every 300 ms, and at each resync (1 s), with
	// room for the retries of a busy machine; not a hot loop.
	if gets, bound := x.provider.callsOf("get"), int(elapsed/every)+int(elapsed/time.Second)+5; gets > bound {
		t.Errorf("%d reads of the record in %s while it was pending, want at most %d", gets, elapsed, bound)
	}
	if n := x.provider.callsOf("create"); n != 1 {
		t.Errorf("creates = %d, want 1", n)
	}

	// A new value.
	_, err := x.client.Patch(t.Context(), "www", types.MergePatchType, []byte(`{"spec":{"value":"192.0.2.2"}}`), metav1.PatchOptions{})
	must(t, err)
	x.ready("www", "192.0.2.2")

	// Drift: someone changes the value at the provider, then deletes the
	// record; the resyncs put both back.
	x.provider.edit(rec.ID, func(p *providerRecord) { p.Value, p.TTL = "198.51.100.7", 60 })
	poll(t, "the value put back at the provider", func(context.Context) (bool, error) {
		recs := x.provider.recordsOf(x.ns + "/www/")
		return len(recs) == 1 && recs[0].Value == "192.0.2.2" && recs[0].TTL == 300, nil
	})
	x.provider.edit(rec.ID, nil)
	again := x.ready("www", "192.0.2.2")
	if again.ID == rec.ID {
		t.Fatalf("record %s deleted at the provider was not created again", rec.ID)
	}
	r, err = x.get(t.Context(), "www")
	must(t, err)
	if c, _ := condition(r, recordCreated); c.Status != metav1.ConditionTrue || c.Reason != "Created" || c.Message != "record "+again.ID {
		t.Errorf("RecordCreated after the re-create = %+v, want True, Created, naming %s", c, again.ID)
	}
	if n := x.provider.callsOf("create"); n != 2 {
		t.Errorf("creates = %d, want 2 (one re-create)", n)
	}

	// Delete: the record goes first, then the DNSRecord.
	must(t, x.client.Delete(t.Context(), "www", metav1.DeleteOptions{}))
	poll(t, "the DNSRecord and its record to go", func(ctx context.Context) (bool, error) {
		_, err := x.client.Get(ctx, "www", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && len(x.provider.recordsOf(x.ns+"/www/")) == 0, nil
	})
	if n := x.provider.callsOf("delete"); n != 1 {
		t.Errorf("deletes = %d, want 1", n)
	}
}

// TestDNSRecordReplicasCreateOnce: two replicas of the operator (no leader
// election) race on the same DNSRecords; the provider's creates are slow,
// so that one replica's cache is stale while the other creates. Each
// DNSRecord gets exactly one record.
func TestDNSRecordReplicasCreateOnce(t *testing.T) {
	t.Parallel()
	x := newDNSFixture(t, 0)
	x.provider.setFault("create", &dnsFault{delay: 500 * time.Millisecond, afterCommit: true, times: -1})
	o := dnsOptions{resync: time.Second, poll: 200 * time.Millisecond}
	x.start(o)
	x.start(o)
	names := []string{"a", "b", "c", "d", "e"}
	for _, name := range names {
		x.create(name, "192.0.2.10")
	}
	for _, name := range names {
		x.ready(name, "192.0.2.10")
	}
	if n := x.provider.callsOf("create"); n != len(names) {
		t.Errorf("creates = %d, want %d, one per DNSRecord", n, len(names))
	}
}

// TestDNSRecordCreateAnswerLost: the provider creates the record but its
// answer is lost (a 500 after the create; an answer later than the
// reconcile timeout). The operator finds the record by its owner comment,
// adopts it, and never creates a second one.
func TestDNSRecordCreateAnswerLost(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		fault dnsFault
	}{
		{"500 after the create", dnsFault{code: http.StatusInternalServerError, afterCommit: true, times: 1}},
		{"answer after the reconcile timeout", dnsFault{delay: 5 * time.Second, afterCommit: true, times: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := newDNSFixture(t, 0)
			x.provider.setFault("create", &tt.fault)
			x.start(dnsOptions{poll: 200 * time.Millisecond, timeout: 2 * time.Second})
			x.create("api", "192.0.2.20")
			rec := x.ready("api", "192.0.2.20")
			r, err := x.get(t.Context(), "api")
			must(t, err)
			if c, _ := condition(r, recordCreated); c.Status != metav1.ConditionTrue || c.Reason != "Adopted" || c.Message != "record "+rec.ID {
				t.Errorf("RecordCreated = %+v, want True, Adopted, naming %s", c, rec.ID)
			}
			if n := x.provider.callsOf("create"); n != 1 {
				t.Errorf("creates = %d, want 1", n)
			}
		})
	}
}

// TestDNSRecordProviderOutage: while the provider answers 500 the
// DNSRecord is Ready False and retried with backoff; while it answers 429
// with Retry-After, to a read or a create, the operator waits that long
// between calls and says so; when it is back the DNSRecord is Ready again.
func TestDNSRecordProviderOutage(t *testing.T) {
	t.Parallel()
	x := newDNSFixture(t, 0)
	// No resync during the test: only the operator's own retries count.
	x.start(dnsOptions{resync: -1, poll: 200 * time.Millisecond})
	x.create("mail", "192.0.2.30")
	x.ready("mail", "192.0.2.30")
	touch := func(value string) {
		_, err := x.client.Patch(t.Context(), "mail", types.MergePatchType, []byte(`{"spec":{"value":"`+value+`"}}`), metav1.PatchOptions{})
		must(t, err)
	}

	// 500: each reconciliation retries the read in place (retry.New: 4
	// calls in about 0.7 s), then the Framework's backoff (0.5 s, 1 s,
	// 2 s, 4 s, ...) spaces the reconciliations.
	x.provider.setFault("get", &dnsFault{code: http.StatusInternalServerError, times: -1})
	touch("192.0.2.31")
	x.waitFor("mail", "Ready False while the provider fails", func(r *DNSRecord) bool {
		return isCondition(r, conditioncontext.Ready, metav1.ConditionFalse, "DnsrecordGetCurrentStateFailed")
	})
	if n := x.countOver("get", 5*time.Second, nil); n > 24 {
		t.Errorf("%d reads in 5 s of outage, want at most 24 (backoff)", n)
	}
	x.provider.setFault("get", nil)
	x.ready("mail", "192.0.2.31")

	// 429 with Retry-After: 2 s between calls, and Ready says why.
	x.provider.setFault("get", &dnsFault{code: http.StatusTooManyRequests, retryAfter: 2, times: -1})
	touch("192.0.2.32")
	x.waitFor("mail", "Ready False, ProviderRateLimited", func(r *DNSRecord) bool {
		return isCondition(r, conditioncontext.Ready, metav1.ConditionFalse, "ProviderRateLimited")
	})
	if n := x.countOver("get", 5*time.Second, nil); n > 4 {
		t.Errorf("%d reads in 5 s while the provider asked to wait 2 s, want at most 4", n)
	}
	x.provider.setFault("get", nil)
	x.ready("mail", "192.0.2.32")

	// 429 on a create: nothing created (RecordCreated False), 2 s between
	// tries, then one record.
	x.provider.setFault("create", &dnsFault{code: http.StatusTooManyRequests, retryAfter: 2, times: -1})
	x.create("new", "192.0.2.33")
	x.waitFor("new", "Ready False, ProviderRateLimited, RecordCreated False", func(r *DNSRecord) bool {
		return isCondition(r, conditioncontext.Ready, metav1.ConditionFalse, "ProviderRateLimited") &&
			isCondition(r, recordCreated, metav1.ConditionFalse, "CreatingFailed")
	})
	if n := x.countOver("create", 5*time.Second, nil); n > 4 {
		t.Errorf("%d creates in 5 s while the provider asked to wait 2 s, want at most 4", n)
	}
	x.provider.setFault("create", nil)
	x.ready("new", "192.0.2.33")
}

// TestDNSRecordRetryAfterAtResync: while the provider answers 429 with
// Retry-After: 3, the informer's resync (every second) does not call it
// sooner than it asked: the operator read the record at every resync, three
// times per wait.
func TestDNSRecordRetryAfterAtResync(t *testing.T) {
	t.Parallel()
	x := newDNSFixture(t, 0)
	x.start(dnsOptions{resync: time.Second, poll: 200 * time.Millisecond})
	x.create("mail", "192.0.2.40")
	x.ready("mail", "192.0.2.40")

	x.provider.setFault("get", &dnsFault{code: http.StatusTooManyRequests, retryAfter: 3, times: -1})
	_, err := x.client.Patch(t.Context(), "mail", types.MergePatchType, []byte(`{"spec":{"value":"192.0.2.41"}}`), metav1.PatchOptions{})
	must(t, err)
	x.waitFor("mail", "Ready False, ProviderRateLimited", func(r *DNSRecord) bool {
		return isCondition(r, conditioncontext.Ready, metav1.ConditionFalse, "ProviderRateLimited")
	})
	if n := x.countOver("get", 6*time.Second, nil); n > 3 {
		t.Errorf("%d reads in 6 s while the provider asked to wait 3 s between them (resync every 1 s), want at most 3", n)
	}
	x.provider.setFault("get", nil)
	x.ready("mail", "192.0.2.41")
}

// TestDNSRecordDeleteOutage: while the provider fails the delete of its
// record, a deleted DNSRecord keeps its finalizer and the delete is retried
// after the provider's Retry-After (429), or with backoff (503), across a
// restart of the operator; once the provider is back, the record and then
// the DNSRecord go.
func TestDNSRecordDeleteOutage(t *testing.T) {
	t.Parallel()
	x := newDNSFixture(t, 0)
	o := dnsOptions{resync: -1, poll: 200 * time.Millisecond}
	stop := x.start(o)
	x.create("old", "192.0.2.40")
	x.create("busy", "192.0.2.41")
	rec := x.ready("old", "192.0.2.40")
	x.ready("busy", "192.0.2.41")
	held := func(name string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			r, err := x.get(ctx, name)
			if err != nil {
				return fmt.Errorf("the DNSRecord while its record cannot be deleted: %w", err)
			}
			if r.DeletionTimestamp == nil || !slices.Contains(r.Finalizers, framework.FinalizerPrefix+dnsOperator) {
				return fmt.Errorf("the DNSRecord lost its finalizer while its record exists: %+v", r.ObjectMeta)
			}
			return nil
		}
	}
	gone := func(name string) {
		t.Helper()
		poll(t, "the record, then the DNSRecord "+name+", to go", func(ctx context.Context) (bool, error) {
			_, err := x.client.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err) && len(x.provider.recordsOf(x.ns+"/"+name+"/")) == 0, nil
		})
	}

	// 429 with Retry-After: the delete waits 2 s between tries.
	x.provider.setFault("delete", &dnsFault{code: http.StatusTooManyRequests, retryAfter: 2, times: -1})
	must(t, x.client.Delete(t.Context(), "busy", metav1.DeleteOptions{}))
	poll(t, "the first delete at the provider", func(context.Context) (bool, error) { return x.provider.callsOf("delete") > 0, nil })
	if n := x.countOver("delete", 5*time.Second, held("busy")); n > 4 {
		t.Errorf("%d deletes in 5 s while the provider asked to wait 2 s, want at most 4", n)
	}
	x.provider.setFault("delete", nil)
	gone("busy")

	x.provider.setFault("delete", &dnsFault{code: http.StatusServiceUnavailable, times: -1})
	deletes := x.provider.callsOf("delete")
	must(t, x.client.Delete(t.Context(), "old", metav1.DeleteOptions{}))
	poll(t, "the first delete at the provider", func(context.Context) (bool, error) { return x.provider.callsOf("delete") > deletes, nil })
	if n := x.countOver("delete", 4*time.Second, held("old")); n > 20 {
		t.Errorf("%d deletes in 4 s of outage, want at most 20 (backoff)", n)
	}
	// A restart during the outage loses nothing.
	stop()
	x.start(o)
	x.countOver("delete", time.Second, held("old"))
	if len(x.provider.recordsOf(x.ns+"/old/")) != 1 {
		t.Fatalf("record %s is gone during the outage", rec.ID)
	}
	x.provider.setFault("delete", nil)
	gone("old")
}
