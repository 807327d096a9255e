package informertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/informer"
)

func obj(name, label string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetLabels(map[string]string{"l": label})
	return u
}

type log struct{ events []string }

func key(o any) string {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		return "tombstone " + t.Key
	}
	u := o.(*unstructured.Unstructured)
	return u.GetName() + "=" + u.GetLabels()["l"]
}

func (l *log) OnAdd(o any, initial bool) {
	l.events = append(l.events, fmt.Sprintf("add %s %v", key(o), initial))
}
func (l *log) OnUpdate(old, o any) { l.events = append(l.events, "update "+key(old)+" -> "+key(o)) }
func (l *log) OnDelete(o any)      { l.events = append(l.events, "delete "+key(o)) }

func TestInformer(t *testing.T) {
	i := New(obj("a", "1"))
	if i.HasSynced() {
		t.Fatal("synced before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- i.Run(ctx) }()
	if err := i.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}

	l := &log{}
	reg, err := i.AddEventHandler(l)
	if err != nil || !reg.HasSynced() {
		t.Fatalf("AddEventHandler() = %v, %v", reg, err)
	}
	mustNil(t, i.Add(obj("b", "1")))
	mustNil(t, i.Update(obj("b", "2")))
	if err := i.Update(obj("zz", "1")); err == nil {
		t.Error("Update of a missing object: nil error")
	}
	mustNil(t, i.Delete(obj("a", "1")))
	mustNil(t, i.DeleteTombstone(obj("b", "2")))
	mustNil(t, i.RemoveEventHandler(reg))
	mustNil(t, i.Add(obj("c", "1")))

	want := "add a=1 true,add b=1 false,update b=1 -> b=2,delete a=1,delete tombstone ns/b"
	if got := strings.Join(l.events, ","); got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	if o, exists, _ := i.Get("ns/c"); !exists || key(o) != "c=1" {
		t.Errorf("Get(ns/c) = %v, %v", o, exists)
	}
	if n := len(i.List()); n != 1 {
		t.Errorf("len(List()) = %d, want 1", n)
	}
	if err := i.Run(ctx); !errors.Is(err, informer.ErrAlreadyStarted) {
		t.Errorf("second Run() = %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v", err)
	}
}

func TestWaitForCacheSync(t *testing.T) {
	i := New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := i.WaitForCacheSync(ctx); !errors.Is(err, informer.ErrNotSynced) {
		t.Errorf("WaitForCacheSync() = %v, want ErrNotSynced", err)
	}
	i.SetSynced()
	i.SetSynced()
	if err := i.WaitForCacheSync(context.Background()); err != nil {
		t.Errorf("WaitForCacheSync() after SetSynced = %v", err)
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
