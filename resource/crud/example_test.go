package crud_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/resource/crud"
)

// record is a DNS A record.
type record struct{ Host, IP string }

// dnsOps keeps an A record "<name>.<namespace>.example.com" pointing at the
// cluster IP of each Service, in a DNS zone outside Kubernetes: here a
// sync.Map standing in for the provider's API.
type dnsOps struct{ zone sync.Map } // host → IP

func host(obj any) string {
	svc := obj.(*corev1.Service)
	return svc.Name + "." + svc.Namespace + ".example.com"
}

func (o *dnsOps) Name() string { return "dns-record" }

// GetCurrentState returns the record in the zone, or nil when there is none.
func (o *dnsOps) GetCurrentState(ctx context.Context, obj any) (any, error) {
	ip, ok := o.zone.Load(host(obj))
	if !ok {
		return nil, nil
	}
	return &record{Host: host(obj), IP: ip.(string)}, nil
}

// GetDesiredState returns the record the Service should have.
func (o *dnsOps) GetDesiredState(ctx context.Context, obj any) (any, error) {
	return &record{Host: host(obj), IP: obj.(*corev1.Service).Spec.ClusterIP}, nil
}

// NewUpdatePatch creates a missing record and updates a stale one.
func (o *dnsOps) NewUpdatePatch(ctx context.Context, obj, current, desired any) (*crud.Patch, error) {
	cur, _ := current.(*record)
	want := desired.(*record)
	p := crud.NewPatch()
	switch {
	case cur == nil:
		p.SetCreateChange(want)
	case *cur != *want:
		p.SetUpdateChange(want)
	}
	return p, nil
}

// NewDeletePatch deletes the record; a nil current state leaves the delete
// part unset, so nothing is applied when the record is gone already.
func (o *dnsOps) NewDeletePatch(ctx context.Context, obj, current, desired any) (*crud.Patch, error) {
	p := crud.NewPatch()
	p.SetDeleteChange(current)
	return p, nil
}

func (o *dnsOps) ApplyCreateChange(ctx context.Context, obj, change any) error {
	r := change.(*record)
	o.zone.Store(r.Host, r.IP)
	fmt.Println("create", r.Host, "A", r.IP)
	return nil
}

func (o *dnsOps) ApplyUpdateChange(ctx context.Context, obj, change any) error {
	r := change.(*record)
	o.zone.Store(r.Host, r.IP)
	fmt.Println("update", r.Host, "A", r.IP)
	return nil
}

func (o *dnsOps) ApplyDeleteChange(ctx context.Context, obj, change any) error {
	r := change.(*record)
	o.zone.Delete(r.Host)
	fmt.Println("delete", r.Host, "A", r.IP)
	return nil
}

func service(ip string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec:       corev1.ServiceSpec{ClusterIP: ip},
	}
}

// ExampleNew runs a resource whose Ops keep a DNS record per Service
// through the life of a Service: created, unchanged, changed and deleted.
func ExampleNew() {
	r, err := crud.New(crud.Config{Ops: &dnsOps{}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	svc := service("10.0.0.10")

	check := func(err error) {
		if err != nil {
			fmt.Println(err)
		}
	}
	check(r.EnsureCreated(ctx, svc)) // no record yet: created
	check(r.EnsureCreated(ctx, svc)) // in sync: nothing applied
	svc.Spec.ClusterIP = "10.0.0.20"
	check(r.EnsureCreated(ctx, svc)) // stale: updated
	check(r.EnsureDeleted(ctx, svc)) // deleted
	check(r.EnsureDeleted(ctx, svc)) // gone already: nothing applied
	// Output:
	// create web.shop.example.com A 10.0.0.10
	// update web.shop.example.com A 10.0.0.20
	// delete web.shop.example.com A 10.0.0.20
}

// failingZone is dnsOps whose zone refuses every create.
type failingZone struct{ *dnsOps }

var errZoneReadOnly = errors.New("zone is read-only")

func (failingZone) ApplyCreateChange(context.Context, any, any) error { return errZoneReadOnly }

// The first failing step ends EnsureCreated; its error names the resource
// and the step and still matches the cause with errors.Is.
func ExampleResource_EnsureCreated() {
	r, err := crud.New(crud.Config{Ops: failingZone{&dnsOps{}}})
	if err != nil {
		panic(err)
	}
	err = r.EnsureCreated(context.Background(), service("10.0.0.10"))
	fmt.Println(err)
	fmt.Println(errors.Is(err, errZoneReadOnly))
	// Output:
	// dns-record: apply create change: zone is read-only
	// true
}

// Plan is a dry run: it returns the patch EnsureCreated would apply, and
// applies nothing.
func ExampleResource_Plan() {
	ops := &dnsOps{}
	ops.zone.Store("web.shop.example.com", "10.0.0.10")
	r, err := crud.New(crud.Config{Ops: ops})
	if err != nil {
		panic(err)
	}
	patch, err := r.Plan(context.Background(), service("10.0.0.20"), false)
	if err != nil {
		panic(err)
	}
	_, create := patch.CreateChange()
	update, ok := patch.UpdateChange()
	fmt.Println("create:", create)
	fmt.Println("update:", ok, *update.(*record))
	ip, _ := ops.zone.Load("web.shop.example.com")
	fmt.Println("zone still has", ip)
	// Output:
	// create: false
	// update: true {web.shop.example.com 10.0.0.20}
	// zone still has 10.0.0.10
}

// A part of a Patch is set only by a value that is not nil: a nil pointer
// leaves it unset, so "SetDeleteChange(current)" deletes only what exists.
func ExamplePatch() {
	var missing *record
	p := crud.NewPatch()
	p.SetCreateChange(&record{Host: "web.shop.example.com", IP: "10.0.0.10"})
	p.SetDeleteChange(missing)
	_, create := p.CreateChange()
	_, del := p.DeleteChange()
	fmt.Println("create:", create, "delete:", del)
	// Output:
	// create: true delete: false
}
