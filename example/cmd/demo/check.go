package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/example/webapp"
)

// world is what the API server holds in the demo's namespace.
type world struct {
	webapps     map[string]*v1alpha1.WebApp
	configMaps  map[string]*corev1.ConfigMap
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
}

// observe lists the WebApps and the operator's children.
func (d *demo) observe(ctx context.Context) (*world, error) {
	ns := d.opts.namespace
	managed := metav1.ListOptions{LabelSelector: labels.Set{webapp.LabelManagedBy: webapp.ManagedBy}.String()}
	w := &world{
		webapps:     map[string]*v1alpha1.WebApp{},
		configMaps:  map[string]*corev1.ConfigMap{},
		deployments: map[string]*appsv1.Deployment{},
		services:    map[string]*corev1.Service{},
	}
	ul, err := d.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list webapps: %w", err)
	}
	for i := range ul.Items {
		wa, err := v1alpha1.FromUnstructured(&ul.Items[i])
		if err != nil {
			return nil, err
		}
		w.webapps[wa.Name] = wa
	}
	cms, err := d.kube.CoreV1().ConfigMaps(ns).List(ctx, managed)
	if err != nil {
		return nil, fmt.Errorf("list configmaps: %w", err)
	}
	for i := range cms.Items {
		w.configMaps[cms.Items[i].Name] = &cms.Items[i]
	}
	deps, err := d.kube.AppsV1().Deployments(ns).List(ctx, managed)
	if err != nil {
		return nil, fmt.Errorf("list deployments: %w", err)
	}
	for i := range deps.Items {
		w.deployments[deps.Items[i].Name] = &deps.Items[i]
	}
	svcs, err := d.kube.CoreV1().Services(ns).List(ctx, managed)
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	for i := range svcs.Items {
		w.services[svcs.Items[i].Name] = &svcs.Items[i]
	}
	return w, nil
}

// problem returns why the i-th WebApp is not yet as it should be, or "".
func (d *demo) problem(w *world, i int) string {
	name := d.names[i]
	if d.deleted[name] {
		var left []string
		if _, ok := w.webapps[name]; ok {
			left = append(left, "WebApp")
		}
		if _, ok := w.configMaps[name]; ok {
			left = append(left, "ConfigMap")
		}
		if _, ok := w.deployments[name]; ok {
			left = append(left, "Deployment")
		}
		if _, ok := w.services[name]; ok {
			left = append(left, "Service")
		}
		if len(left) > 0 {
			return "deleted, but its " + strings.Join(left, ", ") + " still exist"
		}
		return ""
	}
	wa, ok := w.webapps[name]
	if !ok {
		return "WebApp missing"
	}
	ready := meta.FindStatusCondition(wa.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case ready == nil:
		return "no Ready condition yet"
	case ready.Status != metav1.ConditionTrue:
		return fmt.Sprintf("Ready is %s (%s: %s)", ready.Status, ready.Reason, ready.Message)
	case ready.ObservedGeneration != wa.Generation || wa.Status.ObservedGeneration != wa.Generation:
		return "status describes an older generation"
	}
	spec := d.spec(i)
	cm, ok := w.configMaps[name]
	switch {
	case !ok:
		return "ConfigMap missing"
	case cm.Data[webapp.ContentKey] != spec.Content:
		return "ConfigMap content differs"
	}
	dep, ok := w.deployments[name]
	if !ok {
		return "Deployment missing"
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != *spec.Replicas {
		return "Deployment replicas differ"
	}
	if cs := dep.Spec.Template.Spec.Containers; len(cs) == 0 || cs[0].Image != spec.Image {
		return "Deployment image differs"
	}
	_, hasSvc := w.services[name]
	rel2 := dep.Spec.Template.Labels[webapp.LabelRelease] == webapp.Release2
	if d.release2[name] {
		switch {
		case !hasSvc:
			return "release 2, but no Service yet"
		case !rel2:
			return "release 2, but its pod template is not"
		case !strings.Contains(ready.Message, "release-"+webapp.Release2):
			return "release 2, but Ready describes release 1"
		}
		return ""
	}
	switch {
	case hasSvc:
		return "release 1, but has a Service"
	case rel2:
		return "release 1, but its pod template says release 2"
	}
	return ""
}

// progress counts how far the demo's objects are.
type progress struct {
	ok, total                         int
	configMaps, deployments, services int
	notOK                             []string // "name: problem", sorted
}

func (d *demo) measure(w *world) progress {
	p := progress{
		total:       len(d.names),
		configMaps:  len(w.configMaps),
		deployments: len(w.deployments),
		services:    len(w.services),
	}
	for i, name := range d.names {
		if prob := d.problem(w, i); prob != "" {
			p.notOK = append(p.notOK, name+": "+prob)
			continue
		}
		p.ok++
	}
	sort.Strings(p.notOK)
	return p
}

func (p progress) line(what string, elapsed time.Duration) string {
	return fmt.Sprintf("      %d/%d WebApps as expected (%s)   configmaps %d  deployments %d  services %d   %s",
		p.ok, p.total, what, p.configMaps, p.deployments, p.services, elapsed.Round(100*time.Millisecond))
}

// await polls the API server until every object is as it should be, showing
// progress: a line rewritten in place on a terminal, a line every two
// seconds otherwise. It fails with the first objects that are not when ctx
// ends.
func (d *demo) await(ctx context.Context, what string) error {
	d.printf("\n")
	start := time.Now()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var lastPrinted time.Time
	var lastLine string
	var last progress
	for {
		w, err := d.observe(ctx)
		if err == nil {
			last = d.measure(w)
			line := last.line(what, time.Since(start))
			switch {
			case d.tty:
				d.printf("\r%-100s", line)
			case last.ok == last.total || time.Since(lastPrinted) >= 2*time.Second && line != lastLine:
				d.printf("%s\n", line)
				lastPrinted, lastLine = time.Now(), line
			}
			if last.ok == last.total {
				if d.tty {
					d.printf("\n")
				}
				d.record(w)
				d.printf("     ")
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if d.tty {
				d.printf("\n")
			}
			if err != nil {
				return fmt.Errorf("%w (last check: %v)", context.Cause(ctx), err)
			}
			shown := last.notOK
			if len(shown) > 5 {
				shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(last.notOK)-5))
			}
			return fmt.Errorf("%w: %d of %d WebApps not as expected (%s): %s", context.Cause(ctx), last.total-last.ok, last.total, what, strings.Join(shown, "; "))
		case <-tick.C:
		}
	}
}

// record remembers the final counts for the summary.
func (d *demo) record(w *world) {
	d.converged, d.gone, d.leftovers = 0, 0, 0
	for i, name := range d.names {
		ok := d.problem(w, i) == ""
		switch {
		case d.deleted[name] && ok:
			d.gone++
		case d.deleted[name]:
			d.leftovers++
		case ok:
			d.converged++
		}
	}
}
